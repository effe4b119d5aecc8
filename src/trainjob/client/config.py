"""Backend configurations and the rule that picks a backend when none is given.

``LocalProcessBackendConfig``, ``ContainerBackendConfig`` and ``KubernetesBackendConfig`` carry
upstream's names and fields (``LocalBackendConfig`` is our shorter alias of the first). With no
config, :class:`trainjob.TrainerClient` uses :func:`default_backend_config`:

1. ``TRAINJOB_BACKEND=local``, ``=container`` or ``=kubernetes`` forces that backend;
2. else ``kubernetes`` when a cluster is configured: a kubeconfig file named by ``$KUBECONFIG``
   or at ``~/.kube/config`` exists, or this process runs in a pod (in-cluster config);
3. else ``local``.

The choice is logged (``logging.info``) with its reason. Called by ``client.client``.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

logger = logging.getLogger(__name__)

ENV_BACKEND = "TRAINJOB_BACKEND"
SERVICE_ACCOUNT_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")


class LocalProcessBackendConfig(BaseModel):
    """Run TrainJobs as processes on this machine (the local executor).

    Attributes:
        cleanup_venv: Remove the virtual environment ``packages_to_install`` go into when its
            node's process ends (default); ``False`` keeps it in the job's directory until the
            job is deleted.
        env: Environment variables added to every training node (the trainer's env wins).
        home: Where jobs, logs and the store live (``$TRAINJOB_HOME``, else ``~/.trainjob``).
        namespace: Namespace of the jobs in the local store (``default``).
        cwd: Working directory of the jobs' processes (default: this process's).
    """

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    cleanup_venv: bool = True
    env: dict[str, str] = Field(default_factory=dict)
    home: Path | None = None
    namespace: str = "default"
    cwd: str | None = None


LocalBackendConfig = LocalProcessBackendConfig


RUNTIME_SOURCE_SCHEMES = ("github://", "https://", "http://", "file://", "/")


class TrainingRuntimeSource(BaseModel):
    """Where a container backend looks for training runtimes, in priority order (upstream's
    ``ContainerBackendConfig(runtime_source=...)``).

    Attributes:
        sources: URIs of runtime YAML: ``github://owner/repo[/path]``, ``https://...``,
            ``file:///path`` or an absolute path. Runtimes found in none of them come from the
            runtimes built into trainjob (upstream's, as ``github://kubeflow/trainer`` serves).
    """

    model_config = ConfigDict(extra="forbid")

    sources: list[str] = Field(default_factory=lambda: ["github://kubeflow/trainer"])

    @field_validator("sources")
    @classmethod
    def _known_schemes(cls, sources: list[str]) -> list[str]:
        for source in sources:
            if not isinstance(source, str) or not source.startswith(RUNTIME_SOURCE_SCHEMES):
                raise ValueError(
                    f"runtime source {source!r} must start with github://, https://, http://, "
                    "file:// or be an absolute path"
                )
        return sources


class ContainerBackendConfig(BaseModel):
    """Run TrainJobs on this machine as containers of their images (docker or podman).

    Upstream's names (Kubeflow SDK 0.5.0). The jobs are the local backend's (same store, CLI and
    verbs), but each pod runs as containers of its step's image, on a network of the job's own
    (docs/container-backend.md).

    Args:
        pull_policy: ``IfNotPresent`` (default), ``Always`` or ``Never``, for containers without
            an ``imagePullPolicy`` of their own. A local image is used as it is.
        auto_remove: Accepted for compatibility; a job's containers are always removed when they
            end, and its files when it is deleted (copy outputs out before ``delete_job``).
        container_host: A remote engine (``CONTAINER_HOST`` for podman, ``DOCKER_HOST`` for
            docker), e.g. ``unix:///run/user/1000/podman/podman.sock``.
        container_runtime: ``docker`` or ``podman`` (default: docker if its daemon answers, else
            podman, as upstream).
        env: Environment variables added to every training node (the trainer's env wins).
        volumes: Extra bind mounts for every container, docker-py style:
            ``{"/host/dir": {"bind": "/data", "mode": "ro"}}``.
        runtime_source: Accepted for compatibility (a ``TrainingRuntimeSource``); trainjob's
            runtimes are its built-in ClusterTrainingRuntimes (upstream's, which
            ``github://kubeflow/trainer`` serves) and those applied to the local store.
        dataset_initializer_image, model_initializer_image: The image of the dataset- and
            model-initializer steps (default: the runtime's; trainjob's is
            ``localhost/trainjob/initializer:dev`` from ``hack/build-images.sh``).
        initializer_timeout: Seconds an initializer container may run (default 600).
        images: trainjob's own: an image to run instead of one a runtime names, e.g.
            ``{"ghcr.io/kubeflow/trainer/torchtune-trainer:latest":
            "localhost/trainjob/llm-trainer:dev"}`` (an image built here for one that cannot be
            pulled).
        home, namespace, cwd: As for ``LocalProcessBackendConfig``.
    """

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    pull_policy: Literal["IfNotPresent", "Always", "Never"] = "IfNotPresent"
    auto_remove: bool = True
    container_host: str | None = None
    container_runtime: Literal["docker", "podman"] | None = None
    env: dict[str, str] = Field(default_factory=dict)
    volumes: dict[str, dict[str, str]] = Field(default_factory=dict)
    runtime_source: TrainingRuntimeSource = Field(default_factory=TrainingRuntimeSource)
    dataset_initializer_image: str | None = None
    model_initializer_image: str | None = None
    initializer_timeout: int = Field(default=600, gt=0)
    images: dict[str, str] = Field(default_factory=dict)
    home: Path | None = None
    namespace: str = "default"
    cwd: str | None = None


class KubernetesBackendConfig(BaseModel):
    """Run TrainJobs on a Kubernetes cluster with trainjob's (or upstream's) controller.

    Attributes:
        namespace: Namespace of the TrainJobs (default: the kubeconfig context's, the pod's
            namespace in-cluster, else ``default``).
        config_file: A kubeconfig file (default: ``$KUBECONFIG``, else ``~/.kube/config``).
        context: A kubeconfig context (default: the current one).
        client_configuration: A ``kubernetes.client.Configuration`` whose host, token and TLS
            settings are used instead of a kubeconfig (the ``kubernetes`` package is optional).
    """

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    namespace: str | None = None
    config_file: str | None = None
    context: str | None = None
    client_configuration: Any = None


def kubeconfig_paths(env: Mapping[str, str] | None = None) -> list[Path]:
    """The kubeconfig files in effect: ``$KUBECONFIG`` (a path list), else ``~/.kube/config``."""
    environ: Mapping[str, str] = os.environ if env is None else env
    value = environ.get("KUBECONFIG")
    if value:
        return [Path(p).expanduser() for p in value.split(os.pathsep) if p]
    return [Path(environ.get("HOME") or Path.home()) / ".kube" / "config"]


def in_cluster(env: Mapping[str, str] | None = None, sa_dir: Path = SERVICE_ACCOUNT_DIR) -> bool:
    """Whether this process runs in a pod with a service account token."""
    environ: Mapping[str, str] = os.environ if env is None else env
    return bool(environ.get("KUBERNETES_SERVICE_HOST")) and (sa_dir / "token").is_file()


def default_backend_config(
    env: Mapping[str, str] | None = None, sa_dir: Path = SERVICE_ACCOUNT_DIR
) -> LocalProcessBackendConfig | KubernetesBackendConfig | ContainerBackendConfig:
    """The backend to use when the caller named none (rule in the module docstring)."""
    env = os.environ if env is None else env
    forced = (env.get(ENV_BACKEND) or "").strip().lower()
    if forced:
        if forced == "local":
            logger.info("TrainerClient backend: local (%s=local)", ENV_BACKEND)
            return LocalProcessBackendConfig()
        if forced in ("kubernetes", "k8s"):
            logger.info("TrainerClient backend: kubernetes (%s=%s)", ENV_BACKEND, forced)
            return KubernetesBackendConfig()
        if forced == "container":
            logger.info("TrainerClient backend: container (%s=container)", ENV_BACKEND)
            return ContainerBackendConfig()
        raise ValueError(
            f"{ENV_BACKEND}={forced!r} is not a backend; use 'local', 'container' or 'kubernetes'"
        )
    found = [p for p in kubeconfig_paths(env) if p.is_file()]
    if found:
        logger.info("TrainerClient backend: kubernetes (kubeconfig %s)", found[0])
        return KubernetesBackendConfig()
    if in_cluster(env, sa_dir):
        logger.info("TrainerClient backend: kubernetes (in-cluster service account)")
        return KubernetesBackendConfig()
    logger.info(
        "TrainerClient backend: local (no kubeconfig and not in a cluster; set %s to choose)",
        ENV_BACKEND,
    )
    return LocalProcessBackendConfig()
