"""Resume: the restart attempt and a checkpoint directory in a cluster pod's env (trainjob's own).

The local backend gives every container ``$TRAINJOB_RESTART_ATTEMPT`` and
``$TRAINJOB_CHECKPOINT_DIR`` (``trainjob.local.state.home``), so custom training code resumes after a
JobSet restart. On a cluster the same code gets the same variables from this plugin, when the
JobSet can restart at all (``failurePolicy.maxRestarts`` > 0), in every container of the trainer
job:

* ``TRAINJOB_RESTART_ATTEMPT``: the pod's ``jobset.sigs.k8s.io/restart-attempt`` annotation
  (JobSet sets it, with the label of the same name, on every pod of an attempt: 0, 1, ...),
  through the downward API;
* ``TRAINJOB_CHECKPOINT_DIR``: ``<mountPath>/checkpoints`` of the first volume the container
  mounts that survives a pod restart — a ``volumeClaimPolicies`` template of the JobSet (the
  torchtune runtimes' ``initializer`` volume on ``/workspace``) or a ``persistentVolumeClaim``
  volume. Without one there is no variable: an ``emptyDir`` dies with its pod, so a checkpoint
  there would be lost at the restart it is meant for (docs/lifecycle.md says what to add: a PVC).

A variable the container already sets is left as it is. Only the controller asks for it
(``CompileOptions.resume_env``): the local backend sets both itself, with its own paths, and
``trainjob plan`` prints the objects upstream's controller would make.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from trainjob.api import constants as c
from trainjob.api.trainer import TrainJob
from trainjob.core import jobset as js
from trainjob.runtime.info import Info, Obj

if TYPE_CHECKING:
    from trainjob.runtime.compileoptions import CompileOptions

NAME = "Resume"

ENV_CHECKPOINT_DIR = c.ENV_CHECKPOINT_DIR
ENV_RESTART_ATTEMPT = c.ENV_RESTART_ATTEMPT
CHECKPOINTS = "checkpoints"


def can_restart(jobset_spec: Obj) -> bool:
    policy = jobset_spec.get("failurePolicy") or {}
    try:
        return int(policy.get("maxRestarts") or 0) > 0
    except (TypeError, ValueError):
        return False


def persistent_volumes(jobset_spec: Obj, pod_spec: Obj) -> set[str]:
    """Names of the volumes of ``pod_spec`` that outlive a pod: the JobSet's
    ``volumeClaimPolicies`` templates and ``persistentVolumeClaim`` volumes."""
    names = {
        str((t.get("metadata") or {}).get("name"))
        for policy in jobset_spec.get("volumeClaimPolicies") or ()
        for t in policy.get("templates") or ()
    }
    for vol in pod_spec.get("volumes") or ():
        if vol.get("persistentVolumeClaim"):
            names.add(str(vol.get("name")))
    return names


def checkpoint_dir(ctr: Obj, persistent: set[str]) -> str | None:
    for mount in ctr.get("volumeMounts") or ():
        if mount.get("name") in persistent and not mount.get("readOnly"):
            return str(mount.get("mountPath", "")).rstrip("/") + "/" + CHECKPOINTS
    return None


def env(ctr: Obj, persistent: set[str]) -> list[Obj]:
    """The variables to add to ``ctr`` (none it sets itself)."""
    have = {e.get("name") for e in ctr.get("env") or ()}
    out: list[Obj] = []
    if ENV_RESTART_ATTEMPT not in have:
        path = f"metadata.annotations['{js.LABEL_RESTART_ATTEMPT}']"
        out.append({"name": ENV_RESTART_ATTEMPT, "valueFrom": {"fieldRef": {"fieldPath": path}}})
    where = checkpoint_dir(ctr, persistent)
    if where and ENV_CHECKPOINT_DIR not in have:
        out.append({"name": ENV_CHECKPOINT_DIR, "value": where})
    return out


class Resume:
    name = NAME

    def build(self, info: Info, trainjob: TrainJob, options: CompileOptions) -> list[Obj]:
        if not options.resume_env or not can_restart(info.jobset_spec):
            return []
        trainer = info.pod_set_by_ancestor(c.ANCESTOR_TRAINER)
        if trainer is None:
            return []
        persistent = persistent_volumes(info.jobset_spec, trainer.pod_spec)
        for ctr in trainer.containers:
            ctr.setdefault("env", []).extend(env(ctr, persistent))
        return []
