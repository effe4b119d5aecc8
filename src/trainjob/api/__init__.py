"""Models of the ``trainer.kubeflow.org/v1alpha1`` API and the objects a Plan emits.

Public: users may build TrainJobs and runtimes from these models. They dump to the exact YAML
that ``kubectl`` would accept (camelCase, no nulls) via :func:`trainjob.api.base.to_dict`.
"""

from trainjob.api.base import to_dict
from trainjob.api.jobset import JobSet, JobSetSpec, ReplicatedJob
from trainjob.api.trainer import (
    ClusterTrainingRuntime,
    TrainingRuntime,
    TrainingRuntimeSpec,
    TrainJob,
    TrainJobSpec,
    TrainJobStatus,
)

__all__ = [
    "ClusterTrainingRuntime",
    "JobSet",
    "JobSetSpec",
    "ReplicatedJob",
    "TrainJob",
    "TrainJobSpec",
    "TrainJobStatus",
    "TrainingRuntime",
    "TrainingRuntimeSpec",
    "to_dict",
]
