"""A TrainJob's workspace snapshot on a cluster: a ConfigMap it owns, or an ``s3://`` object.

The compiler plans only where the trainer pods find the archive
(:mod:`trainjob.runtime.plugins.workspace`); the bytes are the submitter's, so they are stored
here, around the TrainJob's creation:

* :func:`before_create`: with a URI annotation the archive is put at that ``s3://`` object
  (unless it is there: the key is the digest); without one it must fit in a ConfigMap
  (:data:`~trainjob.workspace.names.CONFIGMAP_LIMIT`), else it goes under the prefix the
  runtime's own URI annotation names, else the submit is refused, before anything is created,
  with the fix (an ``s3://`` place);
* :func:`after_create`: the ConfigMap ``<trainjob>-workspace`` (``binaryData``, immutable, the
  digest in an annotation) with the TrainJob as its controlling owner, so that deleting the
  TrainJob collects it (Kubernetes' garbage collector). A ConfigMap of that name left by an
  earlier TrainJob is replaced. When it cannot be made, the TrainJob is deleted again and the
  error raised: no job waits forever on a volume that will not come.

Used by :class:`trainjob.cluster.executor.KubernetesExecutor`'s ``submit`` and ``create``.
"""

from __future__ import annotations

import base64
import contextlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from trainjob.api import constants as c
from trainjob.errors import ConfigError, TrainJobError
from trainjob.kube import resources as r
from trainjob.kube.errors import AlreadyExists
from trainjob.workspace import names
from trainjob.workspace.pack import Snapshot, human

if TYPE_CHECKING:
    from trainjob.api.trainer import Runtime
    from trainjob.kube import Client

Obj = dict[str, Any]


def _annotations(trainjob: Obj) -> dict[str, str]:
    return dict((trainjob.get("metadata") or {}).get("annotations") or {})


def runtime_uri(runtime: Runtime | None) -> str | None:
    """The ``s3://`` prefix a runtime names for archives too large for a ConfigMap (its
    annotation :data:`~trainjob.workspace.names.URI`), None when it names none."""
    if runtime is None or runtime.metadata is None:
        return None
    return (runtime.metadata.annotations or {}).get(names.URI) or None


def before_create(
    trainjob: Obj, snapshot: Snapshot, runtime_prefix: Callable[[], str | None] | None = None
) -> None:
    """Store the archive in S3 (a URI annotation), or check that a ConfigMap holds it; one too
    large for a ConfigMap goes under the runtime's prefix when it names one (``trainjob``'s
    URI annotation is set to the object then)."""
    ann = _annotations(trainjob)
    if ann.get(names.DIGEST) != snapshot.digest:
        raise ConfigError(
            f"metadata.annotations[{names.DIGEST}]: must be the snapshot's digest {snapshot.digest}"
        )
    uri = ann.get(names.URI)
    if not uri and len(snapshot.archive) > names.CONFIGMAP_LIMIT and runtime_prefix is not None:
        prefix = runtime_prefix()
        if prefix:
            from trainjob.workspace import s3

            uri = s3.object_uri(prefix, snapshot.digest)
            trainjob.setdefault("metadata", {}).setdefault("annotations", {})[names.URI] = uri
    if uri:
        from trainjob.workspace import s3

        s3.put(uri, snapshot.archive, snapshot.digest)
        return
    if len(snapshot.archive) > names.CONFIGMAP_LIMIT:
        raise ConfigError(
            f"workspace {snapshot.source}: its archive is {human(len(snapshot.archive))}, more "
            f"than a ConfigMap holds ({human(names.CONFIGMAP_LIMIT)}): give it an s3:// place "
            "(--workdir-uri s3://bucket/prefix, Workspace(storage_uri=...)) or exclude more"
        )


def check_rerun(kube: Client, trainjob: Obj, namespace: str) -> None:
    """A TrainJob that names a snapshot, submitted without it (a rerun of a stored manifest):
    its archive must still be stored (an ``s3://`` object is; a ConfigMap went with the
    TrainJob that owned it), else ConfigError with the fix, before anything is created."""
    ann = _annotations(trainjob)
    digest = ann.get(names.DIGEST)
    if not digest or ann.get(names.URI):
        return
    name = str((trainjob.get("metadata") or {}).get("name") or "")
    cm = kube.get_or_none(r.CONFIGMAPS, names.configmap_name(name), namespace) if name else None
    if cm is None or _annotations(cm).get(names.DIGEST) != digest:
        raise ConfigError(
            f"metadata.annotations[{names.DIGEST}]: the workspace snapshot {digest} is stored "
            "nowhere on the cluster (its ConfigMap went with the TrainJob that owned it): submit "
            "again with --workdir DIR (with --workdir-uri s3://... a rerun finds it)"
        )


def configmap(trainjob: Obj, snapshot: Snapshot) -> Obj:
    """The ConfigMap that holds ``snapshot`` for the created ``trainjob`` (its owner)."""
    meta = trainjob.get("metadata") or {}
    name = str(meta.get("name", ""))
    owner = {
        "apiVersion": c.API_VERSION,
        "kind": c.TRAINJOB_KIND,
        "name": name,
        "uid": meta.get("uid"),
        "controller": True,
        "blockOwnerDeletion": True,
    }
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": names.configmap_name(name),
            "namespace": meta.get("namespace"),
            "annotations": {names.DIGEST: snapshot.digest, names.SOURCE: snapshot.source},
            "ownerReferences": [owner],
        },
        "immutable": True,
        "binaryData": {names.ARCHIVE_KEY: base64.b64encode(snapshot.archive).decode()},
    }


def after_create(kube: Client, trainjob: Obj, snapshot: Snapshot) -> None:
    """The ConfigMap of the created ``trainjob`` (nothing with a URI annotation)."""
    if _annotations(trainjob).get(names.URI):
        return
    cm = configmap(trainjob, snapshot)
    ns = cm["metadata"]["namespace"]
    try:
        try:
            kube.create(r.CONFIGMAPS, cm, ns)
        except AlreadyExists:  # an earlier TrainJob's, not yet collected
            kube.delete(r.CONFIGMAPS, cm["metadata"]["name"], ns, ignore_not_found=True)
            kube.create(r.CONFIGMAPS, cm, ns)
    except TrainJobError as e:
        name = str((trainjob.get("metadata") or {}).get("name", ""))
        with contextlib.suppress(TrainJobError):
            kube.delete(r.TRAINJOBS, name, ns, ignore_not_found=True)
        raise ConfigError(
            f"cannot store the workspace of {c.TRAINJOB_KIND} {ns}/{name} in ConfigMap "
            f"{cm['metadata']['name']}: {e}; the TrainJob was deleted again"
        ) from e
