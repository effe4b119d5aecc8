"""The container backend's settings, as stored with each job it runs.

Made from the SDK's ``ContainerBackendConfig`` (upstream's names) or the CLI's
``--backend container``; written to the job's ``runner`` column as JSON when it is submitted, so
its supervisor and every later verb use the same engine and options.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

PULL_POLICIES = ("IfNotPresent", "Always", "Never")
ENGINES = ("podman", "docker")


@dataclass(frozen=True)
class Mount:
    """An extra bind mount for every container (ContainerBackendConfig.volumes)."""

    source: str
    target: str
    read_only: bool = False


@dataclass(frozen=True)
class ContainerSettings:
    """How the container backend runs a job's pods.

    ``engine`` is the command (``podman`` or ``docker``, or a path to one); ``host`` a remote
    engine (``CONTAINER_HOST`` / ``DOCKER_HOST``); ``pull_policy`` applies to containers without
    an ``imagePullPolicy`` of their own. ``step_images`` gives the containers of a replicatedJob
    another image (upstream's ``dataset_initializer_image`` and ``model_initializer_image``, for
    ``dataset-initializer`` and ``model-initializer``); ``images`` runs another image wherever a
    pod names one (``{"ghcr.io/kubeflow/trainer/torchtune-trainer:latest":
    "localhost/trainjob/llm-trainer:dev"}``). ``initializer_timeout`` bounds each
    initializer container, in seconds (it is stopped, and its pod fails, after that).
    """

    engine: str = "podman"
    host: str | None = None
    pull_policy: str = "IfNotPresent"
    mounts: tuple[Mount, ...] = ()
    step_images: Mapping[str, str] = field(default_factory=dict)
    images: Mapping[str, str] = field(default_factory=dict)
    initializer_timeout: int | None = None

    def __post_init__(self) -> None:
        if self.pull_policy not in PULL_POLICIES:
            raise ValueError(
                f"pull_policy must be one of {', '.join(PULL_POLICIES)}, not {self.pull_policy!r}"
            )

    def to_json(self) -> str:
        data: dict[str, Any] = asdict(self)
        data["step_images"] = dict(self.step_images)
        data["images"] = dict(self.images)
        return json.dumps({"container": data}, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> ContainerSettings:
        data = dict(json.loads(text)["container"])
        data["mounts"] = tuple(Mount(**m) for m in data.get("mounts") or ())
        data["step_images"] = dict(data.get("step_images") or {})
        data["images"] = dict(data.get("images") or {})
        return cls(**data)
