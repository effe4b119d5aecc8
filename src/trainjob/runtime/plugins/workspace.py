"""Workspace: the folder packed at submit, unpacked into every trainer pod (trainjob's own).

A TrainJob annotated with a snapshot's digest (:data:`trainjob.workspace.names.DIGEST`, written
by ``trainjob run --workdir`` and the SDK's ``Workspace`` option) gets, in every pod of its
trainer job (and with MPI of its ``node`` job, the workers mpirun starts the code on):

* an ``emptyDir`` volume :data:`~trainjob.workspace.names.VOLUME`, mounted read-only at
  ``/trainjob/workspace`` in every container, which is put first on ``PYTHONPATH`` and is the
  working directory of a container that sets none (so the function of a CustomTrainer imports
  the folder's modules, and relative paths are the folder's);
* a first init container :data:`~trainjob.workspace.names.INIT_CONTAINER`, on the trainer's
  image, that fills the volume before the trainer starts with the stdlib-only script
  :data:`~trainjob.workspace.names.UNPACK_SCRIPT` (any image with ``python3``): from the
  ConfigMap ``<trainjob>-workspace`` (key ``workspace.tar.gz``, mounted read-only), or, when
  the TrainJob names an ``s3://`` object (:data:`~trainjob.workspace.names.URI`), from there
  (the trainer's env, its S3 settings among them, is the init container's too). It checks the
  digest and every member before anything is written.

The compiler reads only the annotations: the archive's bytes never pass through it (the
submitter stores them: a ConfigMap owned by the TrainJob, or the ``s3://`` object); the local
backends swap the volume for their read-only copy of the snapshot and drop the init container
(``local/client/workspaces.py``). Validation: the digest is ``sha256:`` and 64 hex digits, the URI an
``s3://bucket/key``, and neither changes once the TrainJob exists (a rerun runs the same code).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from trainjob.api import constants as c
from trainjob.api.trainer import TrainJob
from trainjob.errors import FieldError
from trainjob.runtime.info import Info, Obj, PodSet, upsert_by, upsert_env
from trainjob.runtime.kinds import Kind
from trainjob.workspace import names

if TYPE_CHECKING:
    from trainjob.runtime.compileoptions import CompileOptions

NAME = "Workspace"

ENV_PYTHONPATH = "PYTHONPATH"


def _field(key: str) -> str:
    return f"metadata.annotations[{key}]"


def recorded(trainjob: TrainJob) -> tuple[str | None, str | None]:
    """The TrainJob's (digest, uri) annotations (None where absent)."""
    ann = trainjob.metadata.annotations or {}
    return ann.get(names.DIGEST), ann.get(names.URI)


def init_container(image: str | None, digest: str, uri: str | None, env_of: Obj) -> Obj:
    """The init container that fills the workspace volume of a pod whose trainer is ``env_of``."""
    mounts: list[Obj] = [{"name": names.VOLUME, "mountPath": names.MOUNT_PATH}]
    ctr: Obj = {"name": names.INIT_CONTAINER}
    if image is not None:
        ctr["image"] = image
    if uri:
        ctr["command"] = ["python3", "-c", names.UNPACK_SCRIPT, uri, names.MOUNT_PATH, digest]
        for key in ("env", "envFrom"):
            if env_of.get(key):
                ctr[key] = [dict(e) for e in env_of[key]]
    else:
        archive = f"{names.ARCHIVE_MOUNT_PATH}/{names.ARCHIVE_KEY}"
        ctr["command"] = ["python3", "-c", names.UNPACK_SCRIPT, archive, names.MOUNT_PATH, digest]
        mounts.append(
            {"name": names.ARCHIVE_VOLUME, "mountPath": names.ARCHIVE_MOUNT_PATH, "readOnly": True}
        )
    ctr["volumeMounts"] = mounts
    return ctr


class Workspace:
    name = NAME

    def kinds(self) -> tuple[Kind, ...]:
        """None planned: the archive's ConfigMap is the submitter's (it alone has the bytes)."""
        return ()

    def validate(self, info: Info | None, old: TrainJob | None, new: TrainJob) -> list[FieldError]:
        errors: list[FieldError] = []
        digest, uri = recorded(new)
        if digest is not None and not names.DIGEST_RE.match(digest):
            errors.append(
                FieldError.invalid(
                    _field(names.DIGEST), digest, "must be sha256: followed by 64 hex digits"
                )
            )
        if uri is not None:
            if digest is None:
                errors.append(
                    FieldError.required(
                        _field(names.DIGEST), f"the digest of the archive at {names.URI}"
                    )
                )
            bucket, _, key = uri.removeprefix("s3://").partition("/")
            if not uri.startswith("s3://") or not bucket or not key:
                errors.append(FieldError.invalid(_field(names.URI), uri, "must be s3://bucket/key"))
        if old is not None:
            for was, now, key in zip(
                recorded(old), (digest, uri), (names.DIGEST, names.URI), strict=True
            ):
                if was != now:
                    errors.append(FieldError.invalid(_field(key), now, "field is immutable"))
        return errors

    def build(self, info: Info, trainjob: TrainJob, options: CompileOptions) -> list[Obj]:
        digest, uri = recorded(trainjob)
        if not digest:
            return []
        for pod_set in pod_sets(info):
            _give(pod_set, names.configmap_name(trainjob.metadata.name or ""), digest, uri)
        return []


def pod_sets(info: Info) -> list[PodSet]:
    """The trainer's pod set, and with MPI the workers' (``node``: mpirun runs the code there,
    while the trainer step is the launcher)."""
    trainer = info.pod_set_by_ancestor(c.ANCESTOR_TRAINER)
    out = [trainer] if trainer is not None else []
    policy = info.ml_policy
    if policy is not None and policy.mpi is not None:
        out += [ps for ps in info.pod_sets if ps.name == c.JOB_NODE and ps is not trainer]
    return out


def _give(pod_set: PodSet, configmap: str, digest: str, uri: str | None) -> None:
    """The workspace's volume, mount, env and init container in ``pod_set``'s pods."""
    node = pod_set.container(c.CONTAINER_NODE) or (pod_set.containers or [{}])[0]
    mount = {"name": names.VOLUME, "mountPath": names.MOUNT_PATH, "readOnly": True}
    for ctr in pod_set.containers:
        upsert_by(ctr.setdefault("volumeMounts", []), "name", mount)
        envs = ctr.setdefault("env", [])
        have = next((e for e in envs if e.get("name") == ENV_PYTHONPATH), None)
        if have is None or "value" in have:
            rest = (have or {}).get("value") or ""
            value = names.MOUNT_PATH + (f":{rest}" if rest else "")
            upsert_env(envs, {"name": ENV_PYTHONPATH, "value": value})
        ctr.setdefault("workingDir", names.MOUNT_PATH)
    volumes = pod_set.pod_spec.setdefault("volumes", [])
    upsert_by(volumes, "name", {"name": names.VOLUME, "emptyDir": {}})
    if not uri:
        upsert_by(volumes, "name", {"name": names.ARCHIVE_VOLUME, "configMap": {"name": configmap}})
    inits = pod_set.pod_spec.setdefault("initContainers", [])
    inits[:] = [i for i in inits if i.get("name") != names.INIT_CONTAINER]
    inits.insert(0, init_container(node.get("image"), digest, uri, node))
