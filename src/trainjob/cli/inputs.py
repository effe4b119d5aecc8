"""What ``plan``, ``run``, ``apply`` and ``delete -f`` read: the TrainJobs and runtimes of files.

Reads every document of every file (``-`` is stdin, a directory means its ``*.yaml|*.yml|*.json``),
parses each into its model (the kind and apiVersion checked first, as kubectl does), puts objects
without a namespace in ``-n``'s, validates the runtimes among them and refuses an object given
twice; every problem is collected (:class:`Inputs`), so that each command reports the same lines.
The models, YAML and validation load with this module: the commands import it when they read.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import yaml

from trainjob.api import constants as c
from trainjob.api import load, optimization_validation, validation
from trainjob.api.optimization import OptimizationJob
from trainjob.api.trainer import ClusterTrainingRuntime, Runtime, TrainingRuntime, TrainJob
from trainjob.errors import InvalidError, TrainJobError

DEFAULT_NAMESPACE = "default"
_DIRECTORY_SUFFIXES = (".yaml", ".yml", ".json")


MAX_MANIFEST_BYTES = 3 * 1024 * 1024
"""The most one file (or stdin) may hold: kube-apiserver's request limit (3 MiB), so no object
of a bigger file could be created on a cluster; and reading ``-f /dev/zero`` ends at once."""


def _too_large(source: str) -> TrainJobError:
    return TrainJobError(
        f"{source} is larger than {MAX_MANIFEST_BYTES // (1024 * 1024)} MiB, the most a "
        "Kubernetes API request may hold: check that it is the manifest you meant, or split it"
    )


def _read_limited(f: BinaryIO, source: str) -> str:
    data = f.read(MAX_MANIFEST_BYTES + 1)
    if len(data) > MAX_MANIFEST_BYTES:
        raise _too_large(source)
    try:
        return data.decode()
    except UnicodeDecodeError:
        raise TrainJobError(f"cannot read {source}: not a UTF-8 text file") from None


def _read_stdin() -> str:
    raw = getattr(sys.stdin, "buffer", None)
    if raw is not None:
        return _read_limited(raw, "STDIN")
    text = sys.stdin.read(MAX_MANIFEST_BYTES + 1)  # a text stream (tests): count characters
    if len(text) > MAX_MANIFEST_BYTES:
        raise _too_large("STDIN")
    return text


def read_sources(paths: list[str]) -> list[tuple[str, str]]:
    """``(source, text)`` for each file; ``-`` is stdin (read once), a directory its manifests.

    Each is read up to :data:`MAX_MANIFEST_BYTES`; a bigger one (``/dev/zero``) is an error."""
    out: list[tuple[str, str]] = []
    stdin_read = False
    for p in paths:
        if p == "-":
            if not stdin_read:
                out.append(("STDIN", _read_stdin()))
                stdin_read = True
            continue
        if not p:  # Path("") is the current directory: kubectl's answer instead
            raise TrainJobError('the path "" does not exist')
        path = Path(p)
        try:
            files = (
                sorted(f for f in path.iterdir() if f.suffix in _DIRECTORY_SUFFIXES)
                if path.is_dir()
                else [path]
            )
            for f in files:
                with f.open("rb") as fh:
                    out.append((str(f), _read_limited(fh, f'"{f}"')))
        except FileNotFoundError as e:
            raise TrainJobError(f'the path "{e.filename}" does not exist') from None
        except OSError as e:
            raise TrainJobError(f'cannot read "{e.filename}": {e.strerror}') from None
    return out


def documents(text: str, source: str) -> list[Any]:
    """The objects of one YAML/JSON text (:func:`trainjob.api.load.yaml_documents`)."""
    try:
        return load.yaml_documents(text)
    except yaml.YAMLError as e:
        raise TrainJobError(f"error parsing {source}: {_yaml_problem(e)}") from None
    except RecursionError:
        raise TrainJobError(f"error parsing {source}: yaml: nested too deeply") from None


def _yaml_problem(e: yaml.YAMLError) -> str:
    mark = getattr(e, "problem_mark", None)
    problem = getattr(e, "problem", None) or str(e).splitlines()[0]
    if mark is None:
        return f"yaml: {problem}"
    return f"yaml: line {mark.line + 1}, column {mark.column + 1}: {problem}"


def parse(doc: Any, source: str) -> load.Manifest:
    """One raw document -> its model; the kind and apiVersion are checked first, as kubectl does."""
    if not isinstance(doc, dict):
        raise TrainJobError(
            f'error validating "{source}": error validating data: the object must be a '
            f"YAML mapping, not {_json_type(doc)}"
        )
    kind, api_version = doc.get("kind"), doc.get("apiVersion")
    missing = [f"{k} not set" for k, v in (("apiVersion", api_version), ("kind", kind)) if not v]
    if missing:
        detail = missing[0] if len(missing) == 1 else "[" + ", ".join(missing) + "]"
        raise TrainJobError(f'error validating "{source}": error validating data: {detail}')
    if not isinstance(kind, str) or kind not in load.KINDS or api_version != _api_version(kind):
        raise TrainJobError(
            f'unable to recognize "{source}": no matches for kind "{kind}" in version '
            f'"{api_version}"'
        )
    return load.parse(doc, source)


def _api_version(kind: str) -> str:
    """The apiVersion trainjob serves ``kind`` in (its model's default)."""
    return str(load.KINDS[kind].model_fields["api_version"].default)


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "a " + type(value).__name__


def with_namespace(obj: TrainJob | TrainingRuntime | OptimizationJob, namespace: str | None) -> Any:
    """``obj`` in ``namespace`` (kubectl's rules: an explicit -n must match the object's own)."""
    own = obj.metadata.namespace
    if own and namespace and own != namespace:
        raise TrainJobError(
            f'the namespace from the provided object "{own}" does not match the namespace '
            f"\"{namespace}\". You must pass '--namespace={own}' to perform this operation."
        )
    if own:
        return obj
    meta = obj.metadata.model_copy(update={"namespace": namespace or DEFAULT_NAMESPACE})
    return obj.model_copy(update={"metadata": meta})


@dataclass
class Inputs:
    """What :func:`read_inputs` found in the files: the objects, and every error so far."""

    trainjobs: list[TrainJob] = field(default_factory=list)
    dirs: list[str] = field(default_factory=list)  # each TrainJob's file's directory
    runtimes: list[Runtime] = field(default_factory=list)
    errors: list[TrainJobError] = field(default_factory=list)
    # Runtimes (or TrainJobs) given in the input that are invalid: TrainJobs using them are not
    # compiled (the runtime's own errors say what to fix; "not found" would only confuse).
    broken: set[RuntimeKey] = field(default_factory=set)
    optimizationjobs: list[OptimizationJob] = field(default_factory=list)
    sweep_dirs: list[str] = field(default_factory=list)  # each OptimizationJob's file's directory


def read_inputs(paths: list[str], namespace: str | None = None) -> Inputs:
    """Read and parse every document of ``paths``; check the runtimes among them (their
    admission rules) and that no object is given twice. Errors are collected, not raised: the
    same reading serves ``plan`` and ``run``, so both report the same lines."""
    found = Inputs()
    # Where each object was read (kind, namespace, name) -> source: an object given twice is an
    # error, as ``kubectl create -f`` refuses the second copy (which one would a plan use?).
    given: dict[RuntimeKey, str] = {}
    try:
        sources = read_sources(paths)
    except TrainJobError as e:
        found.errors.append(e)
        return found
    for source, text in sources:
        where = os.getcwd() if source == "STDIN" else os.path.dirname(os.path.abspath(source))
        try:
            docs = documents(text, source)
        except TrainJobError as e:
            found.errors.append(e)
            continue
        for doc in docs:
            try:
                obj = parse(doc, source)
                if isinstance(obj, TrainJob | TrainingRuntime | OptimizationJob):
                    obj = with_namespace(obj, namespace)
            except TrainJobError as e:
                found.errors.append(e)
                if isinstance(e, InvalidError) and isinstance(doc, dict):
                    found.broken.add(_raw_runtime_key(doc, namespace))
                continue
            if isinstance(obj, TrainJob | TrainingRuntime | ClusterTrainingRuntime):
                key = _object_key(obj)
                if key in given:
                    found.errors.append(_given_twice(key, given[key], source))
                    found.broken.add(key)
                    continue
                given[key] = source
            if isinstance(obj, OptimizationJob):
                errs = optimization_validation.validate_optimization_job(obj)
                if errs:
                    found.errors.append(
                        InvalidError(errs, f"{obj.kind}.{c.GROUP}", obj.metadata.name or "")
                    )
                    continue
                found.optimizationjobs.append(obj)
                found.sweep_dirs.append(where)
            elif isinstance(obj, TrainJob):
                found.trainjobs.append(obj)
                found.dirs.append(where)
            elif isinstance(obj, TrainingRuntime | ClusterTrainingRuntime):
                found.runtimes.append(obj)
                errs = validation.validate_runtime(obj)
                if errs:
                    found.errors.append(
                        InvalidError(errs, f"{obj.kind}.{c.GROUP}", obj.metadata.name or "")
                    )
                    found.broken.add(_runtime_key(obj))
    if not found.trainjobs and not found.optimizationjobs and not found.errors:
        where = ", ".join("STDIN" if p == "-" else p for p in paths)
        found.errors.append(TrainJobError(f"no TrainJob found in {where}"))
    return found


def usable(found: Inputs) -> list[tuple[TrainJob, str]]:
    """The TrainJobs of ``found`` (with their directories) whose runtime in the input, and
    themselves, parsed cleanly."""
    return [
        (tj, where)
        for tj, where in zip(found.trainjobs, found.dirs, strict=True)
        if _ref_key(tj) not in found.broken and _object_key(tj) not in found.broken
    ]


# (kind, namespace for a TrainingRuntime else "", name): how a runtimeRef finds its runtime.
RuntimeKey = tuple[str, str, str]


def _object_key(obj: TrainJob | Runtime) -> RuntimeKey:
    if isinstance(obj, TrainJob):
        return (obj.kind, obj.metadata.namespace or DEFAULT_NAMESPACE, obj.metadata.name or "")
    return _runtime_key(obj)


def _given_twice(key: RuntimeKey, first: str, again: str) -> TrainJobError:
    kind, namespace, name = key
    where = f'in namespace "{namespace}" ' if namespace else ""
    sources = f"twice in {first}" if first == again else f"in {first} and again in {again}"
    return TrainJobError(f'{kind} "{name}" {where}is given {sources}')


def _runtime_key(rt: Runtime) -> RuntimeKey:
    ns = (rt.metadata.namespace or DEFAULT_NAMESPACE) if isinstance(rt, TrainingRuntime) else ""
    return (rt.kind, ns, rt.metadata.name or "")


def _raw_runtime_key(doc: dict[str, Any], namespace: str | None) -> RuntimeKey:
    meta = doc.get("metadata")
    if not isinstance(meta, dict):
        meta = {}
    kind = str(doc.get("kind"))
    ns = ""
    if kind == c.TRAINING_RUNTIME_KIND:
        ns = str(meta.get("namespace") or namespace or DEFAULT_NAMESPACE)
    return (kind, ns, str(meta.get("name") or ""))


def _ref_key(tj: TrainJob) -> RuntimeKey:
    ref = tj.spec.runtime_ref
    kind = ref.kind or c.CLUSTER_TRAINING_RUNTIME_KIND
    ns = (tj.metadata.namespace or DEFAULT_NAMESPACE) if kind == c.TRAINING_RUNTIME_KIND else ""
    return (kind, ns, ref.name)
