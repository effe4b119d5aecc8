"""The plugin registry: name -> factory, the single list of plugins (upstream ``registry.go``).

Order matters for the order of objects in a Plan: PodGroups, then MPI's Secret and
ConfigMap, then Flux's ConfigMap and Secret, then TrainJobStatus's CA ConfigMap, then the JobSet
(TrainJobStatus's build adds its env and volume to the trainer pod set the JobSet is built from).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from trainjob.runtime.plugins import (
    coscheduling,
    flux,
    jax,
    jobset,
    mpi,
    plainml,
    resume,
    torch,
    trainjobstatus,
    volcano,
    workspace,
    xgboost,
)

REGISTRY: dict[str, Callable[[], Any]] = {
    coscheduling.NAME: coscheduling.CoScheduling,
    volcano.NAME: volcano.Volcano,
    mpi.NAME: mpi.MPI,
    plainml.NAME: plainml.PlainML,
    torch.NAME: torch.Torch,
    jax.NAME: jax.JAX,
    xgboost.NAME: xgboost.XGBoost,
    flux.NAME: flux.Flux,
    trainjobstatus.NAME: trainjobstatus.TrainJobStatus,  # before JobSet: it edits the trainer
    resume.NAME: resume.Resume,  # before JobSet: it edits the trainer (controller only)
    workspace.NAME: workspace.Workspace,  # before JobSet: it edits the trainer
    jobset.NAME: jobset.JobSet,
}
