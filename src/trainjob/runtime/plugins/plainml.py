"""PlainML: the ML policy when the runtime names no framework (upstream ``plugins/plainml``).

Sets the trainer's pod count from ``trainer.numNodes`` and upserts ``trainer.env`` into the
trainer's ``node`` container. Returns early when another ML policy owns the runtime.
"""

from __future__ import annotations

from trainjob.api.trainer import TrainJob
from trainjob.runtime.info import Info
from trainjob.runtime.plugins.trainer import enforce_trainer

NAME = "PlainML"


class PlainML:
    name = NAME

    def enforce_ml_policy(self, info: Info, trainjob: TrainJob) -> None:
        policy = info.ml_policy
        if policy is not None and (
            policy.torch or policy.mpi or policy.jax or policy.xgboost or policy.flux
        ):
            return
        enforce_trainer(info, trainjob)
