"""JAX: ``jax.distributed`` environment for the trainer (upstream ``plugins/jax``, v2.2+).

Pod count from ``trainer.numNodes``; on the trainer's ``node`` container ``JAX_NUM_PROCESSES``
(one process per pod), ``JAX_PROCESS_ID`` (the Job completion index) and
``JAX_COORDINATOR_ADDRESS`` (the first pod, port 29500), and the port itself. As upstream, the envs
are set only when the TrainJob has a ``trainer`` section. ``trainer.env`` is applied after them
(upstream's JobSet builder does it last), so a user value wins.
"""

from __future__ import annotations

from trainjob.api import constants as c
from trainjob.api.trainer import TrainJob
from trainjob.runtime.info import Info, Obj
from trainjob.runtime.plugins.trainer import enforce_trainer

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
        name = trainjob.metadata.name or ""
        enforce_trainer(info, trainjob, lambda pods: jax_envs(name, pods))
