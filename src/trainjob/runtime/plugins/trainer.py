"""What several ML-policy plugins do to the trainer's job, in one place.

* :func:`enforce_trainer`: the trainer job's pod count from ``trainer.numNodes``; on its ``node``
  container a plugin's envs and the trainer port, then ``trainer.env`` (a user value wins) —
  PlainML, JAX and XGBoost.
* :func:`node_resources`: ``trainer.resourcesPerNode``, else the runtime's ``node`` container
  resources — MPI (slots per GPU) and XGBoost (workers per GPU).
* :func:`reserved_envs_error`: upstream's "must not have reserved envs" — Torch and MPI.
"""

from __future__ import annotations

from collections.abc import Callable, Collection

from trainjob.api import constants as c
from trainjob.api.base import to_dict
from trainjob.api.trainer import Trainer, TrainJob
from trainjob.errors import FieldError
from trainjob.runtime.info import Info, Obj, container_resources, upsert_by, upsert_env


def enforce_trainer(
    info: Info, trainjob: TrainJob, plugin_envs: Callable[[int], list[Obj]] | None = None
) -> None:
    """Pods of the trainer job, then its ``node`` container: ``plugin_envs(pods)`` and port 29500
    when given, and ``trainer.env``. Nothing without a ``trainer`` section (as upstream)."""
    trainer = trainjob.spec.trainer
    ps = info.pod_set_by_ancestor(c.ANCESTOR_TRAINER)
    if ps is None or trainer is None:
        return
    if trainer.num_nodes is not None:
        ps.count = trainer.num_nodes
    node = ps.container(c.CONTAINER_NODE)
    if node is None:
        return
    if plugin_envs is not None:
        upsert_env(node.setdefault("env", []), *plugin_envs(ps.count))
        port = {"containerPort": c.CONTAINER_TRAINER_PORT}
        upsert_by(node.setdefault("ports", []), "containerPort", port)
    if trainer.env:
        upsert_env(node.setdefault("env", []), *(to_dict(e) for e in trainer.env))


def node_resources(info: Info, trainjob: TrainJob) -> Obj:
    """``trainer.resourcesPerNode``, else the resources of container ``node`` in the first job
    named ``node`` or with ancestor ``trainer`` that sets any."""
    trainer = trainjob.spec.trainer
    if trainer is not None and trainer.resources_per_node is not None:
        return to_dict(trainer.resources_per_node)
    for ps in info.pod_sets:
        if ps.name == c.JOB_NODE or ps.ancestor == c.ANCESTOR_TRAINER:
            ctr = ps.container(c.CONTAINER_NODE)
            if ctr is not None and ctr.get("resources") is not None:
                return container_resources(ctr)
    return {}


def reserved_envs_error(trainer: Trainer, reserved: Collection[str]) -> FieldError | None:
    """The error for ``trainer.env`` naming envs the plugin owns, None when it names none."""
    names = sorted({e.name for e in trainer.env or () if e.name in reserved})
    if not names:
        return None
    return FieldError.invalid(
        "spec.trainer.env",
        list(trainer.env or ()),
        f"must not have reserved envs, invalid envs configured: [{' '.join(names)}]",
    )
