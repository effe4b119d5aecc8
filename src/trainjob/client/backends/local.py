"""The ``local`` backend: TrainerClient over :class:`trainjob.local.client.executor.LocalExecutor`.

Jobs are the same TrainJob manifests a cluster would get, run as processes on this machine (one
per pod, multi-node included) by the local executor, which the CLI uses too; the verbs are the
shared adapter's (:mod:`trainjob.client.backends.adapter`). Errors: ``ValueError`` for invalid
input and unknown runtimes, ``RuntimeError`` for a job that does not exist or cannot start.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from trainjob.client import builder, types, workspace
from trainjob.client.backends.adapter import ExecutorBackend
from trainjob.client.config import LocalProcessBackendConfig
from trainjob.errors import AlreadyExistsError, ConfigError, InvalidError, NotFoundError

logger = logging.getLogger(__name__)


class LocalBackend(ExecutorBackend):
    """TrainJobs as local processes; the store is shared with the CLI and other clients."""

    name = "local"
    packages_polling_interval = 1

    def __init__(self, cfg: LocalProcessBackendConfig | None = None, executor: Any = None) -> None:
        self.cfg = cfg or LocalProcessBackendConfig()
        if executor is None:
            from trainjob.local.client.executor import LocalExecutor

            executor = LocalExecutor(self.cfg.home)
        self.executor = executor
        self.namespace = self.cfg.namespace

    @contextmanager
    def _errors(self, what: str, name: str | None = None) -> Iterator[None]:
        try:
            yield
        except NotFoundError as e:
            if name is not None and not self.executor.exists(name, self.namespace):
                raise RuntimeError(f"TrainJob {self.namespace}/{name} not found") from e
            raise RuntimeError(f"Failed to {what}: {e}") from e

    def get_runtime(self, name: str) -> types.Runtime:
        try:
            return super().get_runtime(name)
        except RuntimeError as e:
            if not isinstance(e.__cause__, NotFoundError):
                raise
            known = ", ".join(sorted(r.metadata.name or "" for r in self.executor.list_runtimes()))
            raise RuntimeError(f"Runtime {name!r} not found (runtimes: {known})") from e.__cause__

    def train(
        self,
        runtime: str | types.Runtime | None = None,
        initializer: types.Initializer | None = None,
        trainer: types.AnyTrainer | None = None,
        options: list[Any] | None = None,
    ) -> str:
        rt = self.resolve_runtime(runtime)
        job = builder.build(
            rt,
            initializer,
            trainer,
            options,
            namespace=self.namespace,
            backend=self,
            extra_env=self.cfg.env or None,
            venv=self.cfg.cleanup_venv,
            validate=False,  # submit validates it, with its runtime (catalog.admit)
        )
        name = builder.job_name(job)
        snapshot = workspace.snapshot_in(job, options)
        tj = builder.parse(job)
        try:
            self.executor.submit(tj, cwd=self.cfg.cwd or os.getcwd(), workspace=snapshot)
        except (InvalidError, NotFoundError) as e:
            raise ValueError(str(e)) from e
        except (AlreadyExistsError, ConfigError) as e:
            raise RuntimeError(f"Failed to create TrainJob: {self.namespace}/{name}: {e}") from e
        logger.debug("TrainJob %s/%s has been created", self.namespace, name)
        return name
