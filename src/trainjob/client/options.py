"""``train(options=[...])``: small callables that edit the TrainJob before it is submitted.

Names and fields as upstream ``kubeflow.trainer.options``. Each option is called as
``option(job_spec, trainer, backend)`` where ``job_spec`` is the TrainJob being built, as the dict
Kubernetes would store (camelCase). Unlike upstream, every option works on both backends: the local
backend runs the same TrainJob manifest a cluster would. Called by ``client.builder``.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import Any

from trainjob.client import constants
from trainjob.client.types import AnyTrainer, CustomTrainer, CustomTrainerContainer

Trainer = AnyTrainer | None

_RFC1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")


@dataclass
class Name:
    """Set the TrainJob name (``.metadata.name``) instead of a generated one.

    Args:
        name: A lowercase RFC 1035 label of at most 63 characters.
    """

    name: str

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _RFC1035.match(self.name):
            raise ValueError(
                f"Invalid TrainJob name {self.name!r}: metadata.name must match RFC 1035 DNS "
                "label format (lowercase letters, digits and '-', starting with a letter)"
            )
        if len(self.name) > 63:
            raise ValueError(
                f"Invalid TrainJob name {self.name!r}: metadata.name must be no more than "
                "63 characters"
            )

    def __call__(self, job_spec: dict[str, Any], trainer: Trainer, backend: Any) -> None:
        job_spec.setdefault("metadata", {})["name"] = self.name


@dataclass
class Labels:
    """Add labels to the TrainJob (``.metadata.labels``)."""

    labels: dict[str, str]

    def __call__(self, job_spec: dict[str, Any], trainer: Trainer, backend: Any) -> None:
        job_spec.setdefault("metadata", {})["labels"] = dict(self.labels)


@dataclass
class Annotations:
    """Add annotations to the TrainJob (``.metadata.annotations``)."""

    annotations: dict[str, str]

    def __call__(self, job_spec: dict[str, Any], trainer: Trainer, backend: Any) -> None:
        job_spec.setdefault("metadata", {})["annotations"] = dict(self.annotations)


@dataclass
class TrainerCommand:
    """Set the trainer container command (``.spec.trainer.command``); CustomTrainerContainer only."""

    command: list[str]

    def __call__(self, job_spec: dict[str, Any], trainer: Trainer, backend: Any) -> None:
        if trainer is not None and not isinstance(trainer, CustomTrainerContainer):
            raise ValueError(
                "TrainerCommand can only be used with CustomTrainerContainer. "
                "CustomTrainer generates its own command from the function, and "
                "BuiltinTrainer uses pre-configured commands."
            )
        spec = job_spec.setdefault("spec", {})
        spec.setdefault("trainer", {})["command"] = [str(c) for c in self.command]


@dataclass
class TrainerArgs:
    """Set the trainer container arguments (``.spec.trainer.args``); CustomTrainerContainer only."""

    args: list[str]

    def __call__(self, job_spec: dict[str, Any], trainer: Trainer, backend: Any) -> None:
        if trainer is not None and not isinstance(trainer, CustomTrainerContainer):
            raise ValueError(
                "TrainerArgs can only be used with CustomTrainerContainer. "
                "CustomTrainer generates its own arguments from the function, and "
                "BuiltinTrainer uses pre-configured arguments."
            )
        spec = job_spec.setdefault("spec", {})
        spec.setdefault("trainer", {})["args"] = [str(a) for a in self.args]


class TrainerEnvFrom:
    """Add a trainer env var read from a Secret or ConfigMap key (``.spec.trainer.env``).

    Use ``TrainerEnvFrom.secret(...)`` or ``TrainerEnvFrom.config_map(...)``; CustomTrainer and
    CustomTrainerContainer only.
    """

    def __init__(self, env_name: str, value_from: dict[str, Any]) -> None:
        if not env_name:
            raise ValueError("env_name must be a non-empty string")
        self.env_name = env_name
        self.value_from = dict(value_from)

    @classmethod
    def secret(cls, env_name: str, *, secret_name: str, key: str) -> TrainerEnvFrom:
        return cls(env_name, {"secretKeyRef": {"name": secret_name, "key": key}})

    @classmethod
    def config_map(cls, env_name: str, *, config_map_name: str, key: str) -> TrainerEnvFrom:
        return cls(env_name, {"configMapKeyRef": {"name": config_map_name, "key": key}})

    def __call__(self, job_spec: dict[str, Any], trainer: Trainer, backend: Any) -> None:
        if trainer is not None and not isinstance(trainer, CustomTrainer | CustomTrainerContainer):
            raise ValueError(
                f"TrainerEnvFrom option is not compatible with {type(trainer).__name__}. "
                "Supported trainers: CustomTrainer, CustomTrainerContainer"
            )
        spec = job_spec.setdefault("spec", {})
        env = spec.setdefault("trainer", {}).setdefault("env", [])
        env.append({"name": self.env_name, "valueFrom": self.value_from})

    def __repr__(self) -> str:
        return f"TrainerEnvFrom({self.env_name!r}, {self.value_from!r})"


@dataclass
class ActiveDeadlineSeconds:
    """Fail the TrainJob when it has been active this long (``.spec.activeDeadlineSeconds``)."""

    seconds: int

    def __post_init__(self) -> None:
        if type(self.seconds) is not int or self.seconds < 1:
            raise ValueError("activeDeadlineSeconds must be a positive integer (minimum 1)")

    def __call__(self, job_spec: dict[str, Any], trainer: Trainer, backend: Any) -> None:
        job_spec.setdefault("spec", {})["activeDeadlineSeconds"] = self.seconds


@dataclass
class TTLSecondsAfterFinished:
    """Delete the TrainJob this long after it finished, Complete or Failed
    (``.spec.ttlSecondsAfterFinished``; KEP-2899): its outputs stay. 0 deletes it at once."""

    seconds: int

    def __post_init__(self) -> None:
        if type(self.seconds) is not int or not 0 <= self.seconds <= 2**31 - 1:
            raise ValueError("ttlSecondsAfterFinished must be an integer from 0 to 2147483647")

    def __call__(self, job_spec: dict[str, Any], trainer: Trainer, backend: Any) -> None:
        job_spec.setdefault("spec", {})["ttlSecondsAfterFinished"] = self.seconds


# ---------------------------------------------------------------------------------------------
# RuntimePatch and the patch tree


@dataclass
class ContainerPatch:
    """A patch of one container of the runtime's pods (env, volume mounts, security context)."""

    name: str
    env: list[dict[str, Any]] | None = None
    volume_mounts: list[dict[str, Any]] | None = None
    security_context: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise ValueError("Container name must be a non-empty string")
        for env in self.env or ():
            if not isinstance(env, dict) or not env.get("name"):
                raise ValueError("Each env entry must have a 'name' key")
            if "value" not in env and "valueFrom" not in env:
                raise ValueError("Each env entry must have either 'value' or 'valueFrom' key")
        for mount in self.volume_mounts or ():
            if not isinstance(mount, dict) or not mount.get("name"):
                raise ValueError("Each volume_mounts entry must have a 'name' key")
            path = mount.get("mountPath")
            if not isinstance(path, str) or not path:
                raise ValueError("Each volume_mounts entry must have a 'mountPath' key")
            if not path.startswith("/"):
                raise ValueError(
                    "volume_mounts 'mountPath' must be an absolute path (start with /): " + path
                )


@dataclass
class PodSpecPatch:
    """Pod spec fields a runtime patch may set."""

    service_account_name: str | None = None
    volumes: list[dict[str, Any]] | None = None
    init_containers: list[ContainerPatch] | None = None
    containers: list[ContainerPatch] | None = None
    image_pull_secrets: list[dict[str, Any]] | None = None
    security_context: dict[str, Any] | None = None
    node_selector: dict[str, str] | None = None
    affinity: dict[str, Any] | None = None
    tolerations: list[dict[str, Any]] | None = None
    scheduling_gates: list[dict[str, Any]] | None = None


@dataclass
class PodTemplatePatch:
    metadata: dict[str, Any] | None = None
    spec: PodSpecPatch | None = None


@dataclass
class JobSpecPatch:
    template: PodTemplatePatch | None = None


@dataclass
class JobTemplatePatch:
    metadata: dict[str, Any] | None = None
    spec: JobSpecPatch | None = None


@dataclass
class ReplicatedJobPatch:
    """A patch of one replicatedJob of the runtime (``node``, ``launcher``, an initializer)."""

    name: str
    template: JobTemplatePatch | None = None


@dataclass
class JobSetSpecPatch:
    replicated_jobs: list[ReplicatedJobPatch] | None = None


@dataclass
class JobSetTemplatePatch:
    metadata: dict[str, Any] | None = None
    spec: JobSetSpecPatch | None = None


@dataclass
class TrainingRuntimeSpecPatch:
    template: JobSetTemplatePatch | None = None


@dataclass
class RuntimePatch:
    """Append a patch of the runtime to the TrainJob (``.spec.runtimePatches``).

    The patch's manager is ``trainer.kubeflow.org/kubeflow-sdk``, as upstream's SDK writes it.
    """

    training_runtime_spec: TrainingRuntimeSpecPatch | None = None
    manager: str = dataclasses.field(
        default=constants.RUNTIME_PATCH_MANAGER, init=False, repr=False
    )

    def __call__(self, job_spec: dict[str, Any], trainer: Trainer, backend: Any) -> None:
        spec = job_spec.setdefault("spec", {})
        spec.setdefault("runtimePatches", []).append(patch_to_dict(self))


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(w.capitalize() for w in rest)


def patch_to_dict(obj: Any) -> Any:
    """A patch dataclass tree as its API dict: camelCase keys, None and empty values dropped."""
    if not dataclasses.is_dataclass(obj) or isinstance(obj, type):
        return obj
    out: dict[str, Any] = {}
    for f in dataclasses.fields(obj):
        value = getattr(obj, f.name)
        if value is None:
            continue
        if isinstance(value, list):
            value = [patch_to_dict(v) for v in value]
        elif dataclasses.is_dataclass(value):
            value = patch_to_dict(value)
        if value in ({}, []) and not isinstance(value, str):
            continue
        out[_camel(f.name)] = value
    return out
