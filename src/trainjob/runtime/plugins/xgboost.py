"""XGBoost: the DMLC tracker environment for distributed XGBoost (upstream ``plugins/xgboost``, v2.2+).

Pod count from ``trainer.numNodes``; on the trainer's ``node`` container ``DMLC_TRACKER_URI`` (the
first pod, which runs the tracker), ``DMLC_TRACKER_PORT`` (29500), ``DMLC_TASK_ID`` (the Job
completion index) and ``DMLC_NUM_WORKER`` = pods x (GPUs per node, or 1 on CPU), and port 29500.
As upstream, the envs are set only when the TrainJob has a ``trainer`` section; ``trainer.env``
follows them and may not name a ``DMLC_*`` env the plugin owns (``validate``).
"""

from __future__ import annotations

from trainjob.api import constants as c
from trainjob.api.base import to_dict
from trainjob.api.trainer import TrainJob
from trainjob.errors import FieldError
from trainjob.runtime.info import Info, Obj, container_resources, num_gpus, upsert_by, upsert_env

NAME = "XGBoost"


def workers_per_node(info: Info, trainjob: TrainJob) -> int:
    """One worker per GPU, or one per node without GPUs."""
    trainer = trainjob.spec.trainer
    if trainer is not None and trainer.resources_per_node is not None:
        resources = to_dict(trainer.resources_per_node)
    else:
        resources = {}
        for ps in info.pod_sets:
            if ps.name == c.JOB_NODE or ps.ancestor == c.ANCESTOR_TRAINER:
                ctr = ps.container(c.CONTAINER_NODE)
                if ctr is not None and ctr.get("resources") is not None:
                    resources = container_resources(ctr)
                    break
    return num_gpus(resources) or 1


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
        workers = ps.count * workers_per_node(info, trainjob)
        upsert_env(env, *dmlc_envs(trainjob.metadata.name or "", workers))
        upsert_env(env, *(to_dict(e) for e in trainer.env or ()))
        upsert_by(
            node.setdefault("ports", []),
            "containerPort",
            {"containerPort": c.CONTAINER_TRAINER_PORT},
        )
