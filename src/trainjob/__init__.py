"""trainjob: run Kubeflow Trainer V2 TrainJobs on a laptop or a Kubernetes cluster, with one API.

This module is the public face of the package. It stays cheap to import: no kubernetes, torch or
transformers is imported here, and the SDK (``TrainerClient``, trainers, initializers, options,
with the names of upstream ``kubeflow.trainer``) is imported on first use.
"""

from __future__ import annotations

from trainjob import lazy
from trainjob.errors import FieldError, InvalidError, TrainJobError

__version__ = "0.1.0"

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (see trainjob.lazy)

if TYPE_CHECKING:
    from trainjob.client.client import (
        TrainerClient,
    )
    from trainjob.client.config import (
        ContainerBackendConfig,
        KubernetesBackendConfig,
        LocalBackendConfig,
        LocalProcessBackendConfig,
        TrainingRuntimeSource,
    )
    from trainjob.client.constants import (
        DATASET_PATH,
        MODEL_PATH,
    )
    from trainjob.client.options import (
        ActiveDeadlineSeconds,
        Annotations,
        ContainerPatch,
        JobSetSpecPatch,
        JobSetTemplatePatch,
        JobSpecPatch,
        JobTemplatePatch,
        Labels,
        Name,
        PodSpecPatch,
        PodTemplatePatch,
        ReplicatedJobPatch,
        RuntimePatch,
        TrainerArgs,
        TrainerCommand,
        TrainerEnvFrom,
        TrainingRuntimeSpecPatch,
    )
    from trainjob.client.tpu import (
        get_tpu_num_nodes,
    )
    from trainjob.client.types import (
        BuiltinTrainer,
        ConfigTrainer,
        CustomTrainer,
        CustomTrainerContainer,
        DataCacheInitializer,
        DataFormat,
        DataType,
        Event,
        HuggingFaceDatasetInitializer,
        HuggingFaceModelInitializer,
        Initializer,
        LoraConfig,
        Loss,
        Runtime,
        RuntimeKind,
        RuntimeTrainer,
        S3DatasetInitializer,
        S3ModelInitializer,
        TorchTuneConfig,
        TorchTuneInstructDataset,
        TrainerType,
        TrainJobTemplate,
        TRLConfig,
        TRLMethod,
    )
    from trainjob.client.workspace import (
        Workspace,
    )
    from trainjob.progress import (
        update_trainjob_status,
    )

_LAZY: dict[str, str] = {
    "Workspace": "trainjob.client.workspace",
    "ActiveDeadlineSeconds": "trainjob.client.options",
    "Annotations": "trainjob.client.options",
    "TTLSecondsAfterFinished": "trainjob.client.options",
    "BuiltinTrainer": "trainjob.client.types",
    "ConfigTrainer": "trainjob.client.types",
    "ContainerBackendConfig": "trainjob.client.config",
    "ContainerPatch": "trainjob.client.options",
    "CustomTrainer": "trainjob.client.types",
    "CustomTrainerContainer": "trainjob.client.types",
    "DATASET_PATH": "trainjob.client.constants",
    "DataCacheInitializer": "trainjob.client.types",
    "DataFormat": "trainjob.client.types",
    "DataType": "trainjob.client.types",
    "Event": "trainjob.client.types",
    "HuggingFaceDatasetInitializer": "trainjob.client.types",
    "HuggingFaceModelInitializer": "trainjob.client.types",
    "Initializer": "trainjob.client.types",
    "JobSetSpecPatch": "trainjob.client.options",
    "JobSetTemplatePatch": "trainjob.client.options",
    "JobSpecPatch": "trainjob.client.options",
    "JobTemplatePatch": "trainjob.client.options",
    "KubernetesBackendConfig": "trainjob.client.config",
    "Labels": "trainjob.client.options",
    "LocalBackendConfig": "trainjob.client.config",
    "LocalProcessBackendConfig": "trainjob.client.config",
    "LoraConfig": "trainjob.client.types",
    "Loss": "trainjob.client.types",
    "MODEL_PATH": "trainjob.client.constants",
    "Name": "trainjob.client.options",
    "PodSpecPatch": "trainjob.client.options",
    "PodTemplatePatch": "trainjob.client.options",
    "ReplicatedJobPatch": "trainjob.client.options",
    "Runtime": "trainjob.client.types",
    "RuntimeKind": "trainjob.client.types",
    "RuntimePatch": "trainjob.client.options",
    "RuntimeTrainer": "trainjob.client.types",
    "S3DatasetInitializer": "trainjob.client.types",
    "S3ModelInitializer": "trainjob.client.types",
    "TorchTuneConfig": "trainjob.client.types",
    "TorchTuneInstructDataset": "trainjob.client.types",
    "TRLConfig": "trainjob.client.types",
    "TRLMethod": "trainjob.client.types",
    "TrainJobTemplate": "trainjob.client.types",
    "TrainerArgs": "trainjob.client.options",
    "TrainerClient": "trainjob.client.client",
    "TrainerCommand": "trainjob.client.options",
    "TrainerEnvFrom": "trainjob.client.options",
    "TrainerType": "trainjob.client.types",
    "TrainingRuntimeSource": "trainjob.client.config",
    "TrainingRuntimeSpecPatch": "trainjob.client.options",
    "get_tpu_num_nodes": "trainjob.client.tpu",
    "update_trainjob_status": "trainjob.progress",
}

__all__ = [
    "DATASET_PATH",
    "MODEL_PATH",
    "ActiveDeadlineSeconds",
    "Annotations",
    "BuiltinTrainer",
    "ConfigTrainer",
    "ContainerBackendConfig",
    "ContainerPatch",
    "CustomTrainer",
    "CustomTrainerContainer",
    "DataCacheInitializer",
    "DataFormat",
    "DataType",
    "Event",
    "FieldError",
    "HuggingFaceDatasetInitializer",
    "HuggingFaceModelInitializer",
    "Initializer",
    "InvalidError",
    "JobSetSpecPatch",
    "JobSetTemplatePatch",
    "JobSpecPatch",
    "JobTemplatePatch",
    "KubernetesBackendConfig",
    "Labels",
    "LocalBackendConfig",
    "LocalProcessBackendConfig",
    "LoraConfig",
    "Loss",
    "Name",
    "PodSpecPatch",
    "PodTemplatePatch",
    "ReplicatedJobPatch",
    "Runtime",
    "RuntimeKind",
    "RuntimePatch",
    "RuntimeTrainer",
    "S3DatasetInitializer",
    "S3ModelInitializer",
    "TRLConfig",
    "TRLMethod",
    "TTLSecondsAfterFinished",
    "TorchTuneConfig",
    "TorchTuneInstructDataset",
    "TrainJobError",
    "TrainJobTemplate",
    "TrainerArgs",
    "TrainerClient",
    "TrainerCommand",
    "TrainerEnvFrom",
    "TrainerType",
    "TrainingRuntimeSource",
    "TrainingRuntimeSpecPatch",
    "Workspace",
    "__version__",
    "get_tpu_num_nodes",
    "update_trainjob_status",
]


__getattr__, __dir__ = lazy.exports(__name__, _LAZY)
