"""PlainML: the ML policy when the runtime names no framework (upstream ``plugins/plainml``).

Sets the trainer's pod count from ``trainer.numNodes`` and upserts ``trainer.env`` into the
trainer's ``node`` container. Returns early when another ML policy owns the runtime.
"""

from __future__ import annotations

from trainjob.api import constants as c
from trainjob.api.base import to_dict
from trainjob.api.trainer import TrainJob
from trainjob.runtime.info import Info, upsert_env

NAME = "PlainML"


class PlainML:
    name = NAME

    def enforce_ml_policy(self, info: Info, trainjob: TrainJob) -> None:
        policy = info.ml_policy
        if policy is not None and (
            policy.torch or policy.mpi or policy.jax or policy.xgboost or policy.flux
        ):
            return
        trainer = trainjob.spec.trainer
        ps = info.pod_set_by_ancestor(c.ANCESTOR_TRAINER)
        if ps is None or trainer is None:
            return
        if trainer.num_nodes is not None:
            ps.count = trainer.num_nodes
        node = ps.container(c.CONTAINER_NODE)
        if node is not None and trainer.env:
            upsert_env(node.setdefault("env", []), *(to_dict(e) for e in trainer.env))
