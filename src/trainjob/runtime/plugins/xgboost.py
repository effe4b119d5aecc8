"""XGBoost: the DMLC tracker environment for distributed XGBoost (upstream ``plugins/xgboost``, v2.2+).

Pod count from ``trainer.numNodes``; on the trainer's ``node`` container ``DMLC_TRACKER_URI`` (the
first pod, which runs the tracker), ``DMLC_TRACKER_PORT`` (29500), ``DMLC_TASK_ID`` (the Job
completion index) and ``DMLC_NUM_WORKER`` = pods x (GPUs per node, or 1 on CPU), and port 29500.
As upstream, the envs are set only when the TrainJob has a ``trainer`` section; ``trainer.env``
follows them and may not name a ``DMLC_*`` env the plugin owns (``validate``).
"""

from __future__ import annotations

from trainjob.api import constants as c
from trainjob.api.trainer import TrainJob
from trainjob.errors import FieldError
from trainjob.runtime.info import Info, Obj, num_gpus
from trainjob.runtime.plugins.trainer import enforce_trainer, node_resources

NAME = "XGBoost"


def workers_per_node(info: Info, trainjob: TrainJob) -> int:
    """One worker per GPU, or one per node without GPUs."""
    return num_gpus(node_resources(info, trainjob)) or 1


def dmlc_envs(trainjob_name: str, num_workers: int) -> list[Obj]:
    return [
        {
            "name": c.XGBOOST_ENV_TRACKER_URI,
            "value": f"{trainjob_name}-{c.JOB_NODE}-0-0.{trainjob_name}",
        },
        {"name": c.XGBOOST_ENV_TRACKER_PORT, "value": str(c.CONTAINER_TRAINER_PORT)},
        {
            "name": c.XGBOOST_ENV_TASK_ID,
            "valueFrom": {"fieldRef": {"fieldPath": c.JOB_COMPLETION_INDEX_FIELD}},
        },
        {"name": c.XGBOOST_ENV_NUM_WORKER, "value": str(num_workers)},
    ]


class XGBoost:
    name = NAME

    def validate(self, info: Info | None, old: TrainJob | None, new: TrainJob) -> list[FieldError]:
        if info is None or info.ml_policy is None or info.ml_policy.xgboost is None:
            return []
        trainer = new.spec.trainer
        return [
            FieldError.forbidden(
                f"spec.trainer.env[{i}]", f"{env.name} is reserved for the XGBoost runtime"
            )
            for i, env in enumerate(trainer.env or () if trainer else ())
            if env.name in c.XGBOOST_RESERVED_ENVS
        ]

    def enforce_ml_policy(self, info: Info, trainjob: TrainJob) -> None:
        if info.ml_policy is None or info.ml_policy.xgboost is None:
            return
        name = trainjob.metadata.name or ""
        enforce_trainer(
            info, trainjob, lambda pods: dmlc_envs(name, pods * workers_per_node(info, trainjob))
        )
