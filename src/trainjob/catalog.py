"""The built-in runtimes, runtime lookup by name (files given first, then the built-in set), and
:func:`admit`: the one check every entry point makes before a TrainJob runs.

Built-in ClusterTrainingRuntimes are the YAML files under ``manifests/runtimes/`` (shipped inside
the wheel as ``trainjob/_manifests/runtimes``). ``trainjob plan``, ``trainjob run`` and the SDK's
local backend call :func:`admit`, so a TrainJob or runtime that ``plan`` refuses never runs.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from trainjob.api import constants as c
from trainjob.api import validation
from trainjob.api.load import load_file
from trainjob.api.trainer import ClusterTrainingRuntime, Runtime, TrainingRuntime, TrainJob
from trainjob.errors import InvalidError, NotFoundError


def runtimes_dir() -> Path:
    """Where the built-in runtime manifests live (in the wheel, else in the source tree)."""
    here = Path(__file__).resolve().parent
    packaged = here / "_manifests" / "runtimes"
    if packaged.is_dir():
        return packaged
    return here.parent.parent / "manifests" / "runtimes"


@cache
def builtin_runtimes() -> dict[str, ClusterTrainingRuntime]:
    """Name -> built-in ClusterTrainingRuntime, loaded once."""
    out: dict[str, ClusterTrainingRuntime] = {}
    for path in sorted(runtimes_dir().glob("*.yaml")):
        for obj in load_file(path):
            if isinstance(obj, ClusterTrainingRuntime) and obj.metadata.name:
                out[obj.metadata.name] = obj
    return out


def resolve(trainjob: TrainJob, candidates: list[Runtime] | None = None) -> Runtime:
    """The runtime ``trainjob.spec.runtimeRef`` names: from ``candidates`` first, then built-ins."""
    ref = trainjob.spec.runtime_ref
    kind = ref.kind or c.CLUSTER_TRAINING_RUNTIME_KIND
    for rt in candidates or ():
        if rt.kind != kind or rt.metadata.name != ref.name:
            continue
        if isinstance(rt, TrainingRuntime) and (
            (rt.metadata.namespace or "default") != (trainjob.metadata.namespace or "default")
        ):
            continue
        return rt
    if kind == c.CLUSTER_TRAINING_RUNTIME_KIND and ref.name in builtin_runtimes():
        return builtin_runtimes()[ref.name]
    what = "trainingRuntime" if kind == c.TRAINING_RUNTIME_KIND else "clusterTrainingRuntime"
    known = ", ".join(sorted(builtin_runtimes())) or "<none>"
    raise NotFoundError(
        f'{kind}.{c.GROUP} "{ref.name}" not found: specified {what} must be created before the '
        f"TrainJob is created (built-in runtimes: {known}; or pass the runtime with another -f)"
    )


def admit(trainjob: TrainJob, candidates: list[Runtime] | None = None) -> Runtime:
    """The runtime ``trainjob`` runs on, once both pass the rules a cluster applies to them.

    In the order a cluster meets them: the TrainJob CRD's own rules when its runtime cannot be
    found (then NotFoundError), the runtime's admission rules (its webhook, when it was
    created), then the TrainJob against that runtime (the TrainJob webhook). Raises InvalidError
    of the object at fault, listing every problem.
    """
    from trainjob.runtime import validate

    kind = f"{c.TRAINJOB_KIND}.{c.GROUP}"
    name = trainjob.metadata.name or ""
    try:
        runtime = resolve(trainjob, candidates)
    except NotFoundError:
        errs = validation.validate_trainjob(trainjob)
        if errs:
            raise InvalidError(errs, kind, name) from None
        raise
    errs = validation.validate_runtime(runtime)
    if errs:
        raise InvalidError(errs, f"{runtime.kind}.{c.GROUP}", runtime.metadata.name or "")
    errs = validate(trainjob, runtime)
    if errs:
        raise InvalidError(errs, kind, name)
    return runtime
