"""JAX: ``jax.distributed`` environment for the trainer (upstream ``plugins/jax``, v2.2+).

Pod count from ``trainer.numNodes``; on the trainer's ``node`` container ``JAX_NUM_PROCESSES``
(one process per pod), ``JAX_PROCESS_ID`` (the Job completion index) and
``JAX_COORDINATOR_ADDRESS`` (the first pod, port 29500), and the port itself. As upstream, the envs
are set only when the TrainJob has a ``trainer`` section. ``trainer.env`` is applied after them
(upstream's JobSet builder does it last), so a user value wins.
"""

from __future__ import annotations

from trainjob.api import constants as c
from trainjob.api.base import to_dict
from trainjob.api.trainer import TrainJob
from trainjob.runtime.info import Info, Obj, upsert_by, upsert_env

NAME = "JAX"


def jax_envs(trainjob_name: str, num_processes: int) -> list[Obj]:
    coordinator = f"{trainjob_name}-{c.JOB_NODE}-0-0.{trainjob_name}:{c.CONTAINER_TRAINER_PORT}"
    return [
        {"name": c.JAX_ENV_NUM_PROCESSES, "value": str(num_processes)},
        {
            "name": c.JAX_ENV_PROCESS_ID,
            "valueFrom": {"fieldRef": {"fieldPath": c.JOB_COMPLETION_INDEX_FIELD}},
        },
        {"name": c.JAX_ENV_COORDINATOR_ADDRESS, "value": coordinator},
    ]


class JAX:
    name = NAME

    def enforce_ml_policy(self, info: Info, trainjob: TrainJob) -> None:
        if info.ml_policy is None or info.ml_policy.jax is None:
            return
        ps = info.pod_set_by_ancestor(c.ANCESTOR_TRAINER)
        trainer = trainjob.spec.trainer
        if ps is None or trainer is None:
            return
        if trainer.num_nodes is not None:
            ps.count = trainer.num_nodes
        node = ps.container(c.CONTAINER_NODE)
        if node is None:
            return
        env: list[Obj] = node.setdefault("env", [])
        upsert_env(env, *jax_envs(trainjob.metadata.name or "", ps.count))
        upsert_env(env, *(to_dict(e) for e in trainer.env or ()))
        upsert_by(
            node.setdefault("ports", []),
            "containerPort",
            {"containerPort": c.CONTAINER_TRAINER_PORT},
        )
