"""The SDK's data types, with the names, fields and defaults of upstream ``kubeflow.trainer``.

Users build trainers and initializers from these and get ``Runtime``, ``TrainJob``, ``Step`` and
``Event`` back from :class:`trainjob.TrainerClient`. They live by what they are for:
:mod:`trainjob.client.trainers` (what ``train`` takes), :mod:`trainjob.client.initializers`
(the dataset and model downloads) and :mod:`trainjob.client.results` (what the client returns);
this module exports them all, with ``TrainJobTemplate``, under the names users import. Called by
the builder (``client.builder``) and both backends. No Kubernetes or torch import here: the
module is cheap.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from trainjob.client.initializers import (
    STORAGE_SCHEMES,
    BaseInitializer,
    DataCacheInitializer,
    HuggingFaceDatasetInitializer,
    HuggingFaceModelInitializer,
    Initializer,
    S3DatasetInitializer,
    S3ModelInitializer,
)
from trainjob.client.results import (
    Event,
    Runtime,
    RuntimeKind,
    RuntimeTrainer,
    Step,
    TrainerStatus,
    TrainerType,
    TrainJob,
)
from trainjob.client.trainers import (
    AnyTrainer,
    BuiltinTrainer,
    ConfigTrainer,
    CustomTrainer,
    CustomTrainerContainer,
    DataFormat,
    DataType,
    ElasticPolicy,
    LoraConfig,
    Loss,
    TorchTuneConfig,
    TorchTuneInstructDataset,
    TRLConfig,
    TRLMethod,
)

__all__ = [
    "STORAGE_SCHEMES",
    "AnyTrainer",
    "BaseInitializer",
    "BuiltinTrainer",
    "ConfigTrainer",
    "CustomTrainer",
    "CustomTrainerContainer",
    "DataCacheInitializer",
    "DataFormat",
    "DataType",
    "ElasticPolicy",
    "Event",
    "HuggingFaceDatasetInitializer",
    "HuggingFaceModelInitializer",
    "Initializer",
    "LoraConfig",
    "Loss",
    "Runtime",
    "RuntimeKind",
    "RuntimeTrainer",
    "S3DatasetInitializer",
    "S3ModelInitializer",
    "Step",
    "TRLConfig",
    "TRLMethod",
    "TorchTuneConfig",
    "TorchTuneInstructDataset",
    "TrainJob",
    "TrainJobTemplate",
    "TrainerStatus",
    "TrainerType",
]


@dataclass
class TrainJobTemplate:
    """A reusable TrainJob: ``client.train(**template)`` works.

    Args:
        trainer: The CustomTrainer.
        runtime: A runtime or runtime name (the default runtime when not set).
        initializer: Dataset and model initializers.
    """

    trainer: CustomTrainer
    runtime: str | Runtime | None = None
    initializer: Initializer | None = None

    def keys(self) -> list[str]:
        return ["trainer", "runtime", "initializer"]

    def __getitem__(self, key: str) -> Any:
        return getattr(self, key)
