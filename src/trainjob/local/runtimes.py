"""The local backend's runtimes: the built-in ClusterTrainingRuntimes and those stored in the home.

A stored runtime (``trainjob apply -f``, ``TrainerClient`` on the local backend) wins over a
built-in one of the same kind and name; it is validated as the runtime webhooks validate it on a
cluster before it is stored. Used by :mod:`trainjob.local.executor` and
:mod:`trainjob.local.admission`.
"""

from __future__ import annotations

from trainjob import catalog
from trainjob.api import constants as c
from trainjob.api import validation
from trainjob.api.base import to_dict
from trainjob.api.load import parse
from trainjob.api.trainer import ClusterTrainingRuntime, Runtime, TrainingRuntime
from trainjob.errors import FieldError, InvalidError, NotFoundError
from trainjob.local.home import DEFAULT_NAMESPACE
from trainjob.local.store import Store


def stored(store: Store) -> list[Runtime]:
    """The runtimes stored in the home, as stored."""
    out: list[Runtime] = []
    for body in store.runtimes():
        obj = parse(body)
        if isinstance(obj, TrainingRuntime | ClusterTrainingRuntime):
            out.append(obj)
    return out


def listed(store: Store, namespace: str | None = None) -> list[Runtime]:
    """Built-in ClusterTrainingRuntimes, then stored runtimes (a stored one wins by name);
    TrainingRuntimes of ``namespace`` only, when given."""
    kept = [
        r
        for r in stored(store)
        if namespace is None
        or not isinstance(r, TrainingRuntime)
        or (r.metadata.namespace or DEFAULT_NAMESPACE) == namespace
    ]
    names = {(r.kind, r.metadata.name) for r in kept}
    builtin: list[Runtime] = [
        r for r in catalog.builtin_runtimes().values() if (r.kind, r.metadata.name) not in names
    ]
    return builtin + kept


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
