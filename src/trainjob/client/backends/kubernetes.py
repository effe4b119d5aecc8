"""The ``kubernetes`` backend: TrainerClient over a cluster's apiserver.

The verbs are the shared adapter's (:mod:`trainjob.client.backends.adapter`) over
:class:`trainjob.cluster.executor.KubernetesExecutor`, the executor the CLI's ``--backend
kubernetes`` uses too (its module docstring lists the requests). This module adds the connection
(upstream's rules for a KubernetesBackendConfig), building and creating the TrainJob as upstream's
SDK does, and upstream's errors: ``TimeoutError`` when the apiserver does not answer in time,
``RuntimeError`` (with the apiserver's message, the apiserver's error as its ``__cause__``) for
anything else. No ``kubernetes`` package is needed.
"""

from __future__ import annotations

import copy
import http
import logging
import os
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

from trainjob.client import builder, runtimes, types, workspace
from trainjob.client import constants as c
from trainjob.client.backends.adapter import ExecutorBackend
from trainjob.client.backends.base import print_packages
from trainjob.client.config import KubernetesBackendConfig, kubeconfig_paths
from trainjob.cluster.executor import KubernetesExecutor
from trainjob.errors import ConfigError
from trainjob.kube import Client
from trainjob.kube import config as kconfig
from trainjob.kube import errors as kerrors

logger = logging.getLogger(__name__)


def kube_config(cfg: KubernetesBackendConfig) -> kconfig.Config:
    """The connection a KubernetesBackendConfig describes (rules as upstream's SDK): its
    ``client_configuration``; else a kubeconfig (``config_file``, else ``$KUBECONFIG`` merged,
    else ``~/.kube/config``) unless this process runs in a pod; else the pod's service account."""
    if cfg.client_configuration is not None:
        config = kconfig.from_client_configuration(cfg.client_configuration)
    elif cfg.config_file or not os.environ.get("KUBERNETES_SERVICE_HOST"):
        paths = [Path(cfg.config_file).expanduser()] if cfg.config_file else kubeconfig_paths()
        if not any(p.is_file() for p in paths):
            raise ConfigError(
                "no kubeconfig found (looked at " + ", ".join(str(p) for p in paths) + "); "
                "set KUBECONFIG or use the local backend"
            )
        config = kconfig.from_files(paths, cfg.context)
    else:
        config = kconfig.in_cluster()
    if cfg.namespace:
        config.namespace = cfg.namespace
    return config


@contextmanager
def _errors(what: str) -> Iterator[None]:
    """Raise the SDK's errors for the apiserver's: TimeoutError, else RuntimeError."""
    try:
        yield
    except kerrors.Timeout as e:
        raise TimeoutError(f"Timeout to {what}") from e
    except kerrors.Unreachable as e:
        raise RuntimeError(f"Failed to {what}: {e.__cause__ or e}") from e
    except kerrors.ApiError as e:
        raise RuntimeError(f"Failed to {what}: {_message(e)}") from e


class KubernetesBackend(ExecutorBackend):
    """TrainJobs on a cluster. ``client`` replaces the connection (tests pass one whose
    transport is an ``httpx.MockTransport``)."""

    name = "kubernetes"

    def __init__(
        self,
        cfg: KubernetesBackendConfig | None = None,
        *,
        client: Client | None = None,
        poll_interval: float = 1.0,
    ) -> None:
        self.kube = client or Client(
            kube_config(cfg or KubernetesBackendConfig()),
            timeout=c.DEFAULT_TIMEOUT,
            user_agent="trainjob-sdk",
        )
        self.namespace = self.kube.namespace
        self.executor: KubernetesExecutor = KubernetesExecutor(kube=self.kube)
        self.executor.poll_interval = poll_interval

    def _errors(self, what: str, name: str | None = None) -> AbstractContextManager[None]:
        return _errors(what)

    def _packages_job(self, runtime: types.Runtime) -> tuple[types.Runtime, types.CustomTrainer]:
        """One node, one MPI process, one CPU unless the runtime has GPUs (as upstream)."""
        rt = copy.deepcopy(runtime)
        if rt.trainer.command and rt.trainer.command[0] == "mpirun":
            cmd = list(runtimes.MPI_COMMAND)
            cmd[1:3] = ["-np", "1"]
            rt.trainer.set_command(tuple(cmd))
        trainer = types.CustomTrainer(
            func=print_packages,
            num_nodes=1,
            resources_per_node={"cpu": 1} if rt.trainer.device != "gpu" else None,
        )
        return rt, trainer

    def train(
        self,
        runtime: str | types.Runtime | None = None,
        initializer: types.Initializer | None = None,
        trainer: types.AnyTrainer | None = None,
        options: list[Any] | None = None,
    ) -> str:
        rt = self.resolve_runtime(runtime)
        job = builder.build(rt, initializer, trainer, options, backend=self)
        name = builder.job_name(job)
        snapshot = workspace.snapshot_in(job, options)
        with _errors(f"create {c.TRAINJOB_KIND}: {self.namespace}/{name}"):
            try:
                self.executor.create(job, self.namespace, workspace=snapshot)
            except ConfigError as e:  # its workspace cannot be stored (too large, S3's error)
                raise RuntimeError(
                    f"Failed to create TrainJob: {self.namespace}/{name}: {e}"
                ) from e
        logger.debug("%s %s/%s has been created", c.TRAINJOB_KIND, self.namespace, name)
        return name

    def close(self) -> None:
        self.kube.close()


def _message(e: kerrors.ApiError) -> str:
    """``404 NotFound: trainjobs... not found`` from the apiserver's Status (or its text)."""
    body = e.body
    if isinstance(body, str):
        return f"{e.status} {body.strip()[:200]}"
    if isinstance(body, dict) and body.get("message"):
        return f"{e.status} {body.get('reason') or ''}: {body['message']}".replace(" : ", ": ")
    try:
        return f"{e.status} {http.HTTPStatus(e.status).phrase}"
    except ValueError:
        return str(e.status)
