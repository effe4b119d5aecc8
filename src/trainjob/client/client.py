"""``TrainerClient``: the upstream Kubeflow SDK's client, over the local or Kubernetes backend.

Method names, parameters and return types are upstream's (``kubeflow.trainer.TrainerClient``),
so code written for the Kubeflow SDK runs with only its import changed. Each method forwards to
``self.backend``; with no ``backend_config`` the backend is picked by
:func:`trainjob.client.config.default_backend_config` (local unless a cluster is configured).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator
from typing import Any

from trainjob.client import arguments, types
from trainjob.client import constants as c
from trainjob.client.backends.base import RuntimeBackend
from trainjob.client.config import (
    ENV_BACKEND,
    ContainerBackendConfig,
    KubernetesBackendConfig,
    LocalProcessBackendConfig,
    default_backend_config,
)
from trainjob.client.progress import ProgressDisplay
from trainjob.errors import ConfigError

logger = logging.getLogger(__name__)


class TrainerClient:
    """Create, watch and delete TrainJobs.

    Example::

        from trainjob import TrainerClient, CustomTrainer

        def train():
            import torch.distributed as dist
            ...

        client = TrainerClient()
        name = client.train(trainer=CustomTrainer(func=train, num_nodes=2))
        client.wait_for_job_status(name, show_progress=True)
        for line in client.get_job_logs(name, follow=True):
            print(line)

    Parameters:
        backend_config: (optional) ``LocalProcessBackendConfig`` (alias ``LocalBackendConfig``),
            ``ContainerBackendConfig`` (each pod a docker or podman container of its image) or
            ``KubernetesBackendConfig``. Default: ``$TRAINJOB_BACKEND`` if set, else Kubernetes
            when a kubeconfig or in-cluster config exists, else local.

    Raises:
        ValueError: the backend config is not one of these.
        ConfigError: the Kubernetes connection cannot be set up (no usable kubeconfig); when the
            default rule chose Kubernetes, the message says why and how to run locally.

    ``repr(client)`` names the backend in use: ``TrainerClient(backend='local', ...)``.
    """

    def __init__(
        self,
        backend_config: (
            LocalProcessBackendConfig | ContainerBackendConfig | KubernetesBackendConfig | None
        ) = None,
    ) -> None:
        chosen = not backend_config
        if not backend_config:
            backend_config = default_backend_config()
        self.backend: RuntimeBackend
        if isinstance(backend_config, KubernetesBackendConfig):
            from trainjob.client.backends.kubernetes import KubernetesBackend

            try:
                self.backend = KubernetesBackend(backend_config)
            except ConfigError as e:
                if not chosen:
                    raise
                raise ConfigError(
                    f"{e} (the kubernetes backend was chosen because a kubeconfig or in-cluster "
                    f"config exists; set {ENV_BACKEND}=local or pass LocalProcessBackendConfig() "
                    "to run locally)"
                ) from e
        elif isinstance(backend_config, LocalProcessBackendConfig):
            from trainjob.client.backends.local import LocalBackend

            self.backend = LocalBackend(backend_config)
        elif isinstance(backend_config, ContainerBackendConfig):
            from trainjob.client.backends.container import ContainerBackend

            self.backend = ContainerBackend(backend_config)
        else:
            raise ValueError(f"Invalid backend config '{backend_config}'")

    def __repr__(self) -> str:
        return f"TrainerClient(backend={self.backend.name!r}, namespace={self.backend.namespace!r})"

    def list_runtimes(self) -> list[types.Runtime]:
        """The available runtimes (``[]`` if none)."""
        return self.backend.list_runtimes()

    def get_runtime(self, name: str) -> types.Runtime:
        """The runtime named ``name`` (a namespaced TrainingRuntime first, then cluster-wide)."""
        arguments.name(name, what="runtime")
        return self.backend.get_runtime(name=name)

    def get_runtime_packages(self, runtime: types.Runtime | str) -> None:
        """Print the runtime's Python version, installed packages and GPUs (runs a small job).

        Parameters:
            runtime: A Runtime, or a runtime name such as ``"torch-distributed"``.
        """
        return self.backend.get_runtime_packages(runtime=runtime)

    def train(
        self,
        runtime: str | types.Runtime | None = None,
        initializer: types.Initializer | None = None,
        trainer: types.AnyTrainer | None = None,
        options: list[Any] | None = None,
    ) -> str:
        """Create a TrainJob and return its name.

        Parameters:
            runtime: (optional) A Runtime or runtime name; default ``torch-distributed``
                (``$DEFAULT_TRAINING_RUNTIME``), or for a ConfigTrainer or a TRLConfig the one
                runtime labelled with its framework (KEP-626).
            initializer: (optional) Dataset and model initializers.
            trainer: (optional) CustomTrainer, CustomTrainerContainer, BuiltinTrainer or
                ConfigTrainer; without one the runtime runs as it is.
            options: (optional) Options such as ``Name``, ``Labels``, ``RuntimePatch``.

        Raises:
            ValueError: invalid input (checked before anything is submitted).
            TimeoutError: the backend did not answer in time.
            RuntimeError: the TrainJob could not be created.
        """
        arguments.train(runtime, initializer, trainer, options)
        if runtime is None and (
            isinstance(trainer, types.ConfigTrainer)
            or (
                isinstance(trainer, types.BuiltinTrainer)
                and isinstance(trainer.config, types.TRLConfig)
            )
        ):
            runtime = self._runtime_for(trainer)
        return self.backend.train(
            runtime=runtime, initializer=initializer, trainer=trainer, options=options
        )

    def _runtime_for(self, trainer: types.BuiltinTrainer | types.ConfigTrainer) -> types.Runtime:
        """The one runtime whose framework label is the trainer's config's (KEP-626)."""
        framework = c.TRL if isinstance(trainer.config, types.TRLConfig) else c.TORCH_TUNE
        found = [r for r in self.list_runtimes() if r.trainer.framework == framework]
        if len(found) == 1:
            return found[0]
        names = ", ".join(sorted(r.name for r in found)) or "none"
        raise ValueError(
            f"{type(trainer.config).__name__} needs a runtime with framework '{framework}'; "
            f"{'several match' if found else 'none is installed'} ({names}): pass runtime=..."
        )

    def list_jobs(self, runtime: types.Runtime | None = None) -> list[types.TrainJob]:
        """The TrainJobs (of ``runtime`` only, when given)."""
        arguments.runtime_filter(runtime)
        return self.backend.list_jobs(runtime=runtime)

    def get_job(self, name: str) -> types.TrainJob:
        """The TrainJob named ``name``."""
        arguments.name(name)
        return self.backend.get_job(name=name)

    def get_job_logs(
        self, name: str, step: str = c.NODE + "-0", follow: bool | None = False
    ) -> Iterator[str]:
        """Log lines of one step (``node-0``, ``node-1``, ``dataset-initializer``...).

        With ``follow=True`` it waits for a pending step and yields lines as they are written,
        until the step ends.
        """
        arguments.logs(name, step, follow)
        return self.backend.get_job_logs(name=name, follow=follow, step=step)

    def get_job_events(self, name: str) -> list[types.Event]:
        """Events about the TrainJob and its pods, oldest first."""
        arguments.name(name)
        return self.backend.get_job_events(name=name)

    def wait_for_job_status(
        self,
        name: str,
        status: set[str] = {c.TRAINJOB_COMPLETE},  # noqa: B006 - upstream's signature
        timeout: int = 600,
        polling_interval: float = 2,
        callbacks: list[Callable[[types.TrainJob], None]] | None = None,
        show_progress: bool = False,
    ) -> types.TrainJob:
        """Wait until the TrainJob reaches one of ``status`` and return it.

        Parameters:
            status: Subset of Created, Running, Complete, Failed.
            timeout: Seconds to wait at most.
            polling_interval: Seconds between checks.
            callbacks: (optional) Called with the TrainJob at every check.
            show_progress: Show steps, status and elapsed time (a live table in a terminal, an
                updating line in a notebook, lines otherwise).

        Raises:
            ValueError: invalid arguments.
            RuntimeError: the job Failed (and Failed is not in ``status``): ``TrainJob NAME is
                Failed: <why, from its events>``; or the job cannot be read.
            TimeoutError: ``timeout`` passed.
        """
        arguments.wait(name, status, timeout, polling_interval, callbacks)
        progress = ProgressDisplay() if show_progress else None
        with progress or contextlib.nullcontext():
            return self.backend.wait_for_job_status(
                name=name,
                status=status,
                timeout=timeout,
                polling_interval=polling_interval,
                callbacks=[progress, *(callbacks or ())] if progress else list(callbacks or ()),
            )

    def scale_job(self, name: str, num_nodes: int) -> types.TrainJob:
        """Set the node count of an elastic TrainJob (one trained with ``num_nodes=
        ElasticPolicy(...)``), within its ``min_nodes``..``max_nodes``: new nodes join the
        others at their next rendezvous; stopped ones leave it (docs/elastic.md)."""
        arguments.name(name)
        if not isinstance(num_nodes, int) or isinstance(num_nodes, bool):
            raise TypeError(f"num_nodes must be an int, not {type(num_nodes).__name__}")
        return self.backend.scale_job(name=name, num_nodes=num_nodes)

    def delete_job(self, name: str, purge: bool = False) -> None:
        """Delete the TrainJob, its processes or pods, and its logs. Its outputs (``get_job(name).
        outputs``: the LLM trainer's output_dir, checkpoints, the initializers' downloads) stay
        unless ``purge``, which removes them and logs what it removes."""
        arguments.name(name)
        if not isinstance(purge, bool):
            raise TypeError(f"purge must be a bool, not {type(purge).__name__}")
        return self.backend.delete_job(name=name, purge=purge)
