"""What ``TrainerClient`` returns: ``Runtime``, ``TrainJob``, ``Step``, ``TrainerStatus``, ``Event``.

The names, fields and defaults of upstream ``kubeflow.trainer``. Exported by
:mod:`trainjob.client.types`; no Kubernetes or torch import.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import Enum, StrEnum

from trainjob.client import constants


class TrainerType(Enum):
    CUSTOM_TRAINER = "CustomTrainer"
    BUILTIN_TRAINER = "BuiltinTrainer"


class RuntimeKind(StrEnum):
    CLUSTER_TRAINING_RUNTIME = "ClusterTrainingRuntime"
    TRAINING_RUNTIME = "TrainingRuntime"


@dataclass
class RuntimeTrainer:
    """The trainer of a runtime: its type, framework, image, nodes and devices."""

    trainer_type: TrainerType
    framework: str
    image: str
    num_nodes: int = 1
    device: str = constants.UNKNOWN
    device_count: str = constants.UNKNOWN
    _command: tuple[str, ...] = field(init=False, repr=False, default=())

    @property
    def command(self) -> tuple[str, ...]:
        return self._command

    def set_command(self, command: tuple[str, ...]) -> None:
        self._command = tuple(command)


@dataclass
class Runtime:
    """A training runtime (ClusterTrainingRuntime or TrainingRuntime) as the SDK sees it.

    Fields in upstream's order (SDK v0.5: ``name, trainer, kind, pretrained_model``); ``kind``
    keeps a default so that older code passing only ``name`` and ``trainer`` still works.
    """

    name: str
    trainer: RuntimeTrainer
    kind: RuntimeKind = RuntimeKind.CLUSTER_TRAINING_RUNTIME
    pretrained_model: str | None = None


@dataclass
class Step:
    """One pod of a TrainJob: ``dataset-initializer``, ``model-initializer`` or ``node-N``.

    ``status`` is the pod phase: Pending, Running, Succeeded or Failed.
    """

    name: str
    status: str | None
    pod_name: str
    device: str = constants.UNKNOWN
    device_count: str = constants.UNKNOWN


@dataclass
class TrainerStatus:
    """What the job's training last reported (``status.trainerStatus``, KEP-2779), through
    ``trainjob.update_trainjob_status``, the Kubeflow SDK's helper or transformers'
    ``KubeflowCallback``.

    Attributes:
        progress_percentage: 0-100, None when not reported.
        estimated_remaining_seconds: The ETA at ``last_updated_time``, None when not reported.
        metrics: Metric name -> value, as reported (strings).
        last_updated_time: When it was reported.
    """

    progress_percentage: int | None = None
    estimated_remaining_seconds: int | None = None
    metrics: dict[str, str] = field(default_factory=dict)
    last_updated_time: datetime | None = None


@dataclass
class TrainJob:
    """A TrainJob as the SDK reports it; ``status`` is Created, Running, Complete or Failed.

    ``outputs`` (filled by ``get_job``): what the job produced that outlives it, name ->
    location: ``output_dir`` (the trainer's) and each kept volume, a directory on this machine
    or ``persistentvolumeclaim/NAME`` on a cluster; ``delete_job(name, purge=True)`` removes them.
    ``trainer_status``: the progress its training last reported (None before any report).
    """

    name: str
    runtime: Runtime
    steps: list[Step]
    num_nodes: int
    creation_timestamp: datetime
    status: str = constants.UNKNOWN
    outputs: dict[str, str] = field(default_factory=dict)
    trainer_status: TrainerStatus | None = None


@dataclass
class Event:
    """An event about a TrainJob or one of its pods.

    Attributes:
        involved_object_kind: Kind of the object the event is about (``TrainJob``, ``Pod``...).
        involved_object_name: Name of that object.
        message: Human-readable description.
        reason: Short machine-readable reason.
        event_time: When the event was first recorded.
    """

    involved_object_kind: str
    involved_object_name: str
    message: str
    reason: str
    event_time: datetime
