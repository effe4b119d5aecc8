"""``RuntimeBackend``: the methods every backend of TrainerClient implements (upstream's ABC).

Shared behaviour lives here too: resolving the ``runtime`` argument of ``train`` and the wait
loop (``client.status``), so both backends report and wait the same way.
"""

from __future__ import annotations

import abc
from collections.abc import Iterator
from typing import Any

from trainjob.client import constants as c
from trainjob.client import status as status_mod
from trainjob.client import types


class RuntimeBackend(abc.ABC):
    """One place TrainJobs run. ``name`` is ``local`` or ``kubernetes``."""

    name: str = ""
    namespace: str = c.DEFAULT_NAMESPACE

    @abc.abstractmethod
    def list_runtimes(self) -> list[types.Runtime]: ...

    @abc.abstractmethod
    def get_runtime(self, name: str) -> types.Runtime: ...

    @abc.abstractmethod
    def get_runtime_packages(self, runtime: types.Runtime) -> None: ...

    @abc.abstractmethod
    def train(
        self,
        runtime: str | types.Runtime | None = None,
        initializer: types.Initializer | None = None,
        trainer: types.AnyTrainer | None = None,
        options: list[Any] | None = None,
    ) -> str: ...

    @abc.abstractmethod
    def list_jobs(self, runtime: types.Runtime | None = None) -> list[types.TrainJob]: ...

    @abc.abstractmethod
    def get_job(self, name: str) -> types.TrainJob: ...

    @abc.abstractmethod
    def get_job_logs(
        self, name: str, follow: bool | None = False, step: str = c.NODE + "-0"
    ) -> Iterator[str]: ...

    @abc.abstractmethod
    def get_job_events(self, name: str) -> list[types.Event]: ...

    @abc.abstractmethod
    def delete_job(self, name: str) -> None: ...

    def wait_for_job_status(
        self,
        name: str,
        status: set[str] | None = None,
        timeout: int = 600,
        polling_interval: int = 2,
        callbacks: list[status_mod.Callback] | None = None,
    ) -> types.TrainJob:
        return status_mod.wait_for_job_status(
            self.get_job,
            name,
            set(status) if status is not None else {c.TRAINJOB_COMPLETE},
            timeout,
            polling_interval,
            callbacks,
        )

    def resolve_runtime(self, runtime: str | types.Runtime | None) -> types.Runtime:
        """``train``'s runtime argument: a Runtime, a name, or None for the default runtime."""
        if runtime is None:
            return self.get_runtime(c.DEFAULT_TRAINING_RUNTIME)
        if isinstance(runtime, str):
            return self.get_runtime(runtime)
        if isinstance(runtime, types.Runtime):
            return runtime
        raise ValueError(f"runtime must be a Runtime, a runtime name or None, got {runtime!r}")


def print_packages() -> None:
    """The function ``get_runtime_packages`` runs on a runtime: Python, packages, GPUs."""
    import shutil
    import subprocess
    import sys

    print(f"Python: {sys.version}")
    pip = subprocess.run(
        [sys.executable, "-m", "pip", "list"], capture_output=True, text=True, check=False
    )
    if pip.returncode == 0:
        print(pip.stdout)
    else:
        print("Unable to get installed packages: pip is not available")
    if shutil.which("nvidia-smi"):
        print("Available GPUs on the single training node")
        smi = subprocess.run(["nvidia-smi"], capture_output=True, text=True, check=False)
        print(smi.stdout)
