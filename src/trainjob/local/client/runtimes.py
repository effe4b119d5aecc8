"""The local backend's runtimes: the built-in ClusterTrainingRuntimes and those stored in the home.

A stored runtime (``trainjob apply -f``, ``TrainerClient`` on the local backend) wins over a
built-in one of the same kind and name; it is validated as the runtime webhooks validate it on a
cluster before it is stored. Used by :mod:`trainjob.local.client.executor` and
:mod:`trainjob.local.client.admission`. :func:`listed_objects` lists them as plain objects, without
YAML or pydantic (``trainjob get runtimes``); the API models load where the others need them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from trainjob.api import constants as c
from trainjob.errors import FieldError, InvalidError, NotFoundError
from trainjob.executor import catalog
from trainjob.local.state.home import DEFAULT_NAMESPACE
from trainjob.local.state.store import Store

if TYPE_CHECKING:
    from trainjob.api.trainer import Runtime

T = TypeVar("T")
KINDS = (c.TRAINING_RUNTIME_KIND, c.CLUSTER_TRAINING_RUNTIME_KIND)


def stored(store: Store) -> list[Runtime]:
    """The runtimes stored in the home, as stored."""
    from trainjob.api.load import parse
    from trainjob.api.trainer import ClusterTrainingRuntime, TrainingRuntime

    out: list[Runtime] = []
    for body in store.runtimes():
        obj = parse(body)
        if isinstance(obj, TrainingRuntime | ClusterTrainingRuntime):
            out.append(obj)
    return out


def _merged(
    builtin: Sequence[T], kept: Sequence[T], namespace: str | None,
    identity: Callable[[T], tuple[str, str, str]],
) -> list[T]:  # fmt: skip
    """Built-in runtimes, then stored ones (a stored one wins by kind and name); TrainingRuntimes
    of ``namespace`` only, when given. ``identity``: (kind, name, namespace) of one."""
    kept = [
        r
        for r in kept
        if namespace is None
        or identity(r)[0] != c.TRAINING_RUNTIME_KIND
        or (identity(r)[2] or DEFAULT_NAMESPACE) == namespace
    ]
    names = {identity(r)[:2] for r in kept}
    return [r for r in builtin if identity(r)[:2] not in names] + kept


def listed(store: Store, namespace: str | None = None) -> list[Runtime]:
    """Built-in ClusterTrainingRuntimes, then stored runtimes (a stored one wins by name);
    TrainingRuntimes of ``namespace`` only, when given."""

    def identity(r: Runtime) -> tuple[str, str, str]:
        return r.kind, r.metadata.name or "", r.metadata.namespace or ""

    builtin: list[Runtime] = list(catalog.builtin_runtimes().values())
    return _merged(builtin, stored(store), namespace, identity)


def listed_objects(
    store: Store, cache_dir: Path | None, namespace: str | None = None
) -> list[Mapping[str, Any]]:
    """:func:`listed` as plain objects: the built-in ones from the JSON copy of their files in
    ``cache_dir`` (:func:`trainjob.executor.catalog.builtin_documents`), the stored ones as stored."""

    def identity(r: Mapping[str, Any]) -> tuple[str, str, str]:
        meta = r.get("metadata") or {}
        return (
            str(r.get("kind") or ""),
            str(meta.get("name") or ""),
            str(meta.get("namespace") or ""),
        )

    kept = [r for r in store.runtimes() if isinstance(r, dict) and r.get("kind") in KINDS]
    return _merged(catalog.builtin_documents(cache_dir), kept, namespace, identity)


def find(
    store: Store,
    name: str,
    kind: str = c.CLUSTER_TRAINING_RUNTIME_KIND,
    namespace: str | None = None,
) -> Runtime:
    """One runtime by name (NotFoundError when absent)."""
    for rt in listed(store):
        if rt.kind != kind or rt.metadata.name != name:
            continue
        if kind == c.TRAINING_RUNTIME_KIND and (rt.metadata.namespace or DEFAULT_NAMESPACE) != (
            namespace or DEFAULT_NAMESPACE
        ):
            continue
        return rt
    plural = "trainingruntimes" if kind == c.TRAINING_RUNTIME_KIND else "clustertrainingruntimes"
    raise NotFoundError(f'{plural}.{c.GROUP} "{name}" not found')


def apply(store: Store, runtime: Runtime) -> Runtime:
    """Store (create or replace) a runtime so later submits can refer to it."""
    from trainjob.api import validation
    from trainjob.api.base import to_dict
    from trainjob.api.trainer import TrainingRuntime

    if not runtime.metadata.name:
        raise InvalidError([FieldError.required("metadata.name", "name is required")], runtime.kind)
    errs = validation.validate_runtime(runtime)
    if errs:  # as the runtime webhooks refuse it on a cluster
        raise InvalidError(errs, f"{runtime.kind}.{c.GROUP}", runtime.metadata.name or "")
    namespace = ""
    if isinstance(runtime, TrainingRuntime):
        namespace = runtime.metadata.namespace or DEFAULT_NAMESPACE
    store.put_runtime(runtime.kind, namespace, runtime.metadata.name, to_dict(runtime))
    return runtime
