"""Models of the ``trainer.kubeflow.org/v1alpha1`` API and the objects a Plan emits.

Public: users may build TrainJobs and runtimes from these models. They dump to the exact YAML
that ``kubectl`` would accept (camelCase, no nulls) via :func:`trainjob.api.base.to_dict`.
"""

from __future__ import annotations

from trainjob import lazy

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (see trainjob.lazy)

if TYPE_CHECKING:
    from trainjob.api.base import to_dict
    from trainjob.api.jobset import JobSet, JobSetSpec, ReplicatedJob
    from trainjob.api.optimization import (
        OptimizationJob,
        OptimizationJobSpec,
        OptimizationJobStatus,
    )
    from trainjob.api.trainer import (
        ClusterTrainingRuntime,
        TrainingRuntime,
        TrainingRuntimeSpec,
        TrainJob,
        TrainJobSpec,
        TrainJobStatus,
    )

# Names are imported on first use, so that ``trainjob.api.constants`` loads without pydantic.
_EXPORTS = {
    "to_dict": "trainjob.api.base",
    "JobSet": "trainjob.api.jobset",
    "JobSetSpec": "trainjob.api.jobset",
    "ReplicatedJob": "trainjob.api.jobset",
    "OptimizationJob": "trainjob.api.optimization",
    "OptimizationJobSpec": "trainjob.api.optimization",
    "OptimizationJobStatus": "trainjob.api.optimization",
    "ClusterTrainingRuntime": "trainjob.api.trainer",
    "TrainingRuntime": "trainjob.api.trainer",
    "TrainingRuntimeSpec": "trainjob.api.trainer",
    "TrainJob": "trainjob.api.trainer",
    "TrainJobSpec": "trainjob.api.trainer",
    "TrainJobStatus": "trainjob.api.trainer",
}

__all__ = [
    "ClusterTrainingRuntime",
    "JobSet",
    "JobSetSpec",
    "OptimizationJob",
    "OptimizationJobSpec",
    "OptimizationJobStatus",
    "ReplicatedJob",
    "TrainJob",
    "TrainJobSpec",
    "TrainJobStatus",
    "TrainingRuntime",
    "TrainingRuntimeSpec",
    "to_dict",
]


__getattr__, __dir__ = lazy.exports(__name__, _EXPORTS)
