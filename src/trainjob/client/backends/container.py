"""The ``container`` backend: TrainerClient over the local executor, each pod a container.

Everything but how pods run is the local backend's (:mod:`trainjob.client.backends.local`): the
same store, steps, statuses, logs and waits; the executor is given the container settings made
from upstream's ``ContainerBackendConfig``, and the engine (docker or podman) is found when the
client is made, as upstream's adapters are.
"""

from __future__ import annotations

import logging

from trainjob.client.backends.local import LocalBackend
from trainjob.client.config import ContainerBackendConfig, LocalProcessBackendConfig
from trainjob.local.job.containers import ContainerSettings, Mount, engine

logger = logging.getLogger(__name__)


def settings_of(cfg: ContainerBackendConfig) -> ContainerSettings:
    """The executor's container settings for ``cfg``; ConfigError when no engine runs here."""
    found = engine.detect(cfg.container_runtime, cfg.container_host)
    mounts = []
    for source, spec in cfg.volumes.items():
        if "bind" not in spec:
            raise ValueError(
                f"volumes[{source!r}] needs a 'bind' (the path in the container), e.g. "
                f"{{{source!r}: {{'bind': '/data', 'mode': 'ro'}}}}"
            )
        mode = spec.get("mode", "rw")
        if mode not in ("rw", "ro"):
            raise ValueError(f"volumes[{source!r}]['mode'] must be 'rw' or 'ro', not {mode!r}")
        mounts.append(Mount(source, spec["bind"], read_only=mode == "ro"))
    step_images = {}
    if cfg.dataset_initializer_image:
        step_images["dataset-initializer"] = cfg.dataset_initializer_image
    if cfg.model_initializer_image:
        step_images["model-initializer"] = cfg.model_initializer_image
    if not cfg.auto_remove:
        logger.warning(
            "ContainerBackendConfig(auto_remove=False): a job's containers are removed when they "
            "end and its workspace when the job is deleted; copy outputs out before delete_job"
        )
    return ContainerSettings(
        engine=found.command,
        host=cfg.container_host,
        pull_policy=cfg.pull_policy,
        mounts=tuple(mounts),
        step_images=step_images,
        images=dict(cfg.images),
        initializer_timeout=cfg.initializer_timeout,
    )


class ContainerBackend(LocalBackend):
    """TrainJobs as containers on this machine; the store is shared with the local backend."""

    name = "container"

    def __init__(self, cfg: ContainerBackendConfig | None = None) -> None:
        from trainjob.local.client.executor import LocalExecutor

        self.container_cfg = cfg or ContainerBackendConfig()
        local = LocalProcessBackendConfig(
            env=self.container_cfg.env,
            home=self.container_cfg.home,
            namespace=self.container_cfg.namespace,
            cwd=self.container_cfg.cwd,
        )
        runner = settings_of(self.container_cfg).to_json()
        super().__init__(local, LocalExecutor(local.home, runner=runner))
