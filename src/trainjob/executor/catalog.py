"""The built-in runtimes, runtime lookup by name (files given first, then the built-in set), and
:func:`admit`: the one check every entry point makes before a TrainJob runs.

Built-in ClusterTrainingRuntimes are the YAML files under ``manifests/runtimes/`` (shipped inside
the wheel as ``trainjob/_manifests/runtimes``). ``trainjob plan``, ``trainjob run`` and the SDK's
local backend call :func:`admit`, so a TrainJob or runtime that ``plan`` refuses never runs.

:func:`builtin_documents` gives the same runtimes as plain objects, from a JSON copy kept in a
cache directory when one is given (``trainjob get runtimes`` lists them without YAML or pydantic:
parsing the files and building the models was most of its 0.6 s). The API models load where a
function needs them, so importing this module costs nothing.
"""

from __future__ import annotations

import contextlib
import json
import os
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trainjob.api import constants as c
from trainjob.errors import InvalidError, NotFoundError

if TYPE_CHECKING:
    from trainjob.api.trainer import ClusterTrainingRuntime, Runtime, TrainJob

CACHE_FILE = "builtin-runtimes.json"
CACHE_FORMAT = 1
"""The copy's layout: a copy of another layout is made again."""


def runtimes_dir() -> Path:
    """Where the built-in runtime manifests live (in the wheel, else in the source tree)."""
    package = Path(__file__).resolve().parent.parent  # src/trainjob (this file: executor/)
    packaged = package / "_manifests" / "runtimes"
    if packaged.is_dir():
        return packaged
    return package.parent.parent / "manifests" / "runtimes"


@cache
def builtin_runtimes() -> dict[str, ClusterTrainingRuntime]:
    """Name -> built-in ClusterTrainingRuntime, loaded once."""
    from trainjob.api.load import load_file
    from trainjob.api.trainer import ClusterTrainingRuntime

    out: dict[str, ClusterTrainingRuntime] = {}
    for path in sorted(runtimes_dir().glob("*.yaml")):
        for obj in load_file(path):
            if isinstance(obj, ClusterTrainingRuntime) and obj.metadata.name:
                out[obj.metadata.name] = obj
    return out


def builtin_documents(cache_dir: Path | None = None) -> list[dict[str, Any]]:
    """The built-in ClusterTrainingRuntimes as their documents (plain objects, in the order and
    with the names :func:`builtin_runtimes` gives), read from the JSON copy in ``cache_dir``
    while it is that of these files (their names, sizes and times, and those of the YAML reader
    that parsed them), else from the files (the copy then written, when ``cache_dir`` can be).
    Not validated: the files ship with trainjob and its tests validate every one; what runs
    goes through :func:`admit`."""
    paths = sorted(runtimes_dir().glob("*.yaml"))
    api = Path(__file__).resolve().parent / "api"
    key: list[Any] = [CACHE_FORMAT, str(runtimes_dir())]
    for p in [api / "load.py", api / "goyaml.py", *paths]:
        try:
            st = p.stat()
            key.append([p.name, st.st_size, st.st_mtime_ns])
        except OSError:  # an install without the sources: the files' names alone
            key.append([p.name, None, None])
    cached = cache_dir / CACHE_FILE if cache_dir is not None else None
    if cached is not None:
        try:
            got = json.loads(cached.read_text())
            if got.get("key") == key and isinstance(got.get("runtimes"), list):
                return list(got["runtimes"])
        except (OSError, ValueError, AttributeError):
            pass
    from trainjob.api.load import load_documents

    by_name: dict[str, dict[str, Any]] = {}
    for p in paths:
        for doc in load_documents(p.read_text(), str(p)):
            if not isinstance(doc, dict) or doc.get("kind") != c.CLUSTER_TRAINING_RUNTIME_KIND:
                continue
            name = (doc.get("metadata") or {}).get("name")
            if isinstance(name, str) and name:
                by_name[name] = doc
    out = list(by_name.values())
    if cached is not None:
        _write_cache(cached, {"key": key, "runtimes": out})
    return out


def _write_cache(path: Path, data: dict[str, Any]) -> None:
    """Write the copy whole (a reader never sees half of it), 0600, never through a link;
    quietly not where it cannot be (a read-only home)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        with os.fdopen(os.open(tmp, flags, 0o600), "w") as f:
            f.write(json.dumps(data, separators=(",", ":")))
        os.replace(tmp, path)
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink()


def resolve(trainjob: TrainJob, candidates: list[Runtime] | None = None) -> Runtime:
    """The runtime ``trainjob.spec.runtimeRef`` names: from ``candidates`` first, then built-ins."""
    from trainjob.api.trainer import TrainingRuntime

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
    from trainjob.api import validation
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
