"""Find a TrainJob's runtime on the cluster, through its runtime snapshot (upstream v2.3, KEP-2599).

The first time a TrainJob is built, its TrainingRuntime (same namespace) or ClusterTrainingRuntime
is read from the apiserver and stored in the ConfigMap ``<trainjob>-runtime-snapshot`` (key
``runtime``, YAML, controller ownerReference to the TrainJob). Later builds read the snapshot, so
editing or deleting a runtime never changes a TrainJob that already started. A snapshot is checked
like upstream's: owned by this TrainJob (uid), has the key, names the runtimeRef's kind/group/name.

Used by ``trainjob.controller.reconcile`` and the TrainJob admission webhook.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

import yaml

from trainjob.api import constants as c
from trainjob.api.load import parse
from trainjob.api.trainer import Runtime
from trainjob.errors import InvalidError, TrainJobError
from trainjob.kube import resources as r
from trainjob.kube.client import Client
from trainjob.kube.errors import NotFound

Obj = dict[str, Any]

_METADATA_KEYS = (
    "name",
    "namespace",
    "uid",
    "resourceVersion",
    "generation",
    "labels",
    "annotations",
)


class RuntimeNotFoundError(TrainJobError):
    """The runtime the TrainJob names does not exist (upstream ``errorNotFoundSpecified...``)."""


class SnapshotError(TrainJobError):
    """The snapshot ConfigMap exists but cannot be used (upstream "invalid runtime snapshot: ...")."""


def group_kind(trainjob: Obj) -> str:
    """Upstream ``RuntimeRefToRuntimeRegistryKey``: ``Kind.group`` of ``spec.runtimeRef``."""
    ref = (trainjob.get("spec") or {}).get("runtimeRef") or {}
    kind = ref.get("kind") or c.CLUSTER_TRAINING_RUNTIME_KIND
    group = ref.get("apiGroup") if ref.get("apiGroup") is not None else c.GROUP
    return f"{kind}.{group}"


SUPPORTED = {
    f"{c.TRAINING_RUNTIME_KIND}.{c.GROUP}": r.TRAINING_RUNTIMES,
    f"{c.CLUSTER_TRAINING_RUNTIME_KIND}.{c.GROUP}": r.CLUSTER_TRAINING_RUNTIMES,
}


def snapshot_name(trainjob: Obj) -> str:
    return str(trainjob["metadata"]["name"]) + c.RUNTIME_SNAPSHOT_SUFFIX


def owner_reference(trainjob: Obj) -> Obj:
    meta = trainjob["metadata"]
    return {
        "apiVersion": c.API_VERSION,
        "kind": c.TRAINJOB_KIND,
        "name": meta["name"],
        "uid": meta.get("uid", ""),
        "controller": True,
        "blockOwnerDeletion": True,
    }


def snapshot_yaml(runtime: Obj) -> str:
    """The runtime as the snapshot stores it (YAML), made once per runtime version: every
    TrainJob of a runtime stores the same text, and dumping YAML is the costliest step of a
    TrainJob's first reconcile."""
    meta = runtime.get("metadata") or {}
    key = (str(meta.get("uid") or ""), str(meta.get("resourceVersion") or ""))
    if all(key):
        with _SNAPSHOT_LOCK:
            text = _SNAPSHOTS.get(key)
            if text is not None:
                _SNAPSHOTS.move_to_end(key)
                return text
    clean: Obj = {
        "apiVersion": runtime.get("apiVersion", c.API_VERSION),
        "kind": runtime.get("kind"),
        "metadata": {k: meta[k] for k in _METADATA_KEYS if meta.get(k) is not None},
        "spec": runtime.get("spec") or {},
    }
    text = yaml.dump(clean, Dumper=_Dumper, sort_keys=True)
    if all(key):
        with _SNAPSHOT_LOCK:
            _SNAPSHOTS[key] = text
            while len(_SNAPSHOTS) > _SNAPSHOT_CACHE_SIZE:
                _SNAPSHOTS.popitem(last=False)
    return text


_SNAPSHOTS: OrderedDict[tuple[str, str], str] = OrderedDict()
_SNAPSHOT_LOCK = threading.Lock()
_SNAPSHOT_CACHE_SIZE = 64
# libyaml's emitter when PyYAML has it (same text as the pure-Python one, ten times faster).
_Dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def snapshot_configmap(trainjob: Obj, runtime: Obj) -> Obj:
    """The snapshot ConfigMap (an apply configuration) holding ``runtime`` as YAML."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": snapshot_name(trainjob),
            "namespace": trainjob["metadata"]["namespace"],
            "ownerReferences": [owner_reference(trainjob)],
        },
        "data": {c.RUNTIME_SNAPSHOT_KEY: snapshot_yaml(runtime)},
    }


def runtime_from_snapshot(trainjob: Obj, configmap: Obj) -> Obj:
    """The runtime dict stored in ``configmap``; raises SnapshotError with upstream's messages."""
    owners = (configmap.get("metadata") or {}).get("ownerReferences") or []
    controller = next((o for o in owners if o.get("controller")), None)
    if controller is None or controller.get("uid") != trainjob["metadata"].get("uid"):
        raise SnapshotError(
            "invalid runtime snapshot: a snapshot configmap exists but is owned by another object"
        )
    data = (configmap.get("data") or {}).get(c.RUNTIME_SNAPSHOT_KEY)
    if data is None:
        raise SnapshotError(
            f'invalid runtime snapshot: snapshot ConfigMap missing "{c.RUNTIME_SNAPSHOT_KEY}" '
            "data key"
        )
    try:
        runtime = yaml.safe_load(data)
    except yaml.YAMLError as e:
        raise SnapshotError(
            f"invalid runtime snapshot: unable to unmarshal the snapshot: {e}"
        ) from None
    if not isinstance(runtime, dict):
        raise SnapshotError("invalid runtime snapshot: unable to unmarshal the snapshot")
    ref = (trainjob.get("spec") or {}).get("runtimeRef") or {}
    got_group = str(runtime.get("apiVersion", "")).partition("/")[0]
    got_kind = str(runtime.get("kind", ""))
    got_name = str((runtime.get("metadata") or {}).get("name", ""))
    if (
        (ref.get("kind") is not None and got_kind != ref.get("kind"))
        or (ref.get("apiGroup") is not None and got_group != ref.get("apiGroup"))
        or got_name != ref.get("name")
    ):
        raise SnapshotError(
            "invalid runtime snapshot: the snapshot refers to the wrong runtime: expecting a runtime "
            "with name, api group and kind of "
            f'"{ref.get("name")}", "{ref.get("apiGroup") or "<any>"}", "{ref.get("kind") or "<any>"}" '
            "but found runtime with name, api group and kind of "
            f'"{got_name}", "{got_group}", "{got_kind}"'
        )
    return runtime


def fetch_runtime(client: Client, trainjob: Obj) -> Obj:
    """The live runtime named by ``spec.runtimeRef``; RuntimeNotFoundError when it is absent."""
    resource = SUPPORTED[group_kind(trainjob)]
    name = str(((trainjob.get("spec") or {}).get("runtimeRef") or {}).get("name", ""))
    try:
        return client.get(resource, name, trainjob["metadata"]["namespace"])
    except NotFound as e:
        msg = f"{not_found_prefix(resource)}: {not_found_message(resource, name)}"
        raise RuntimeNotFoundError(msg) from e


def not_found_message(resource: r.Resource, name: str) -> str:
    """Upstream's text for a runtime it does not find: ``TrainingRuntime.trainer.kubeflow.org "x"
    not found``, the kind and not the resource (controller-runtime's cache reader builds its
    NotFound from the GroupVersionKind), in the webhook's refusal and the reconcile's event."""
    return f'{resource.kind}.{resource.group} "{name}" not found'


def not_found_prefix(resource: r.Resource) -> str:
    if resource is r.TRAINING_RUNTIMES:
        return "TrainingRuntime specified in TrainJob is not found"
    return "not found ClusterTrainingRuntime specified in TrainJob"


def to_model(runtime: Obj) -> Runtime:
    """The API model of a runtime dict (InvalidError when the stored object does not parse).

    Parsed once per runtime version (uid, resourceVersion and which metadata it carries: the
    live object and its snapshot parse apart) and shared: parsing is ~1 ms, and the admission
    webhook and every first reconcile of a TrainJob need it. Nobody edits a model: the compiler
    copies what it changes (``tests/unit/controller/test_runtime_models.py``)."""
    meta = runtime.get("metadata") or {}
    key = (
        str(runtime.get("kind") or ""),
        str(meta.get("uid") or ""),
        str(meta.get("resourceVersion") or ""),
        tuple(sorted(meta)),
    )
    if key[1] and key[2]:
        with _MODELS_LOCK:
            cached = _MODELS.get(key)
            if cached is not None:
                _MODELS.move_to_end(key)
                return cached
    model = parse(runtime)
    if model.kind not in (c.TRAINING_RUNTIME_KIND, c.CLUSTER_TRAINING_RUNTIME_KIND):
        raise InvalidError([], f"{model.kind}.{c.GROUP}", "")
    if key[1] and key[2]:
        with _MODELS_LOCK:
            _MODELS[key] = model  # type: ignore[assignment]
            while len(_MODELS) > _SNAPSHOT_CACHE_SIZE:
                _MODELS.popitem(last=False)
    return model  # type: ignore[return-value]


_MODELS: OrderedDict[tuple[str, str, str, tuple[str, ...]], Runtime] = OrderedDict()
_MODELS_LOCK = threading.Lock()
