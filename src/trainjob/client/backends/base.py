"""``RuntimeBackend``: the methods every backend of TrainerClient implements (upstream's ABC).

Shared behaviour lives here too: resolving the ``runtime`` argument of ``train`` and the wait
loop (``client.status``), so both backends report and wait the same way.
"""

from __future__ import annotations

import abc
from collections.abc import Iterator
from typing import Any

from trainjob.client import constants as c
from trainjob.client import runtimes, types
from trainjob.client import status as status_mod
from trainjob.client.steps import NODE_STEP


class RuntimeBackend(abc.ABC):
    """One place TrainJobs run. ``name`` is ``local`` or ``kubernetes``."""

    name: str = ""
    namespace: str = c.DEFAULT_NAMESPACE

    @abc.abstractmethod
    def list_runtimes(self) -> list[types.Runtime]: ...

    @abc.abstractmethod
    def get_runtime(self, name: str) -> types.Runtime: ...

    packages_polling_interval = 2
    """Seconds between status checks of ``get_runtime_packages``'s job."""

    def get_runtime_packages(self, runtime: types.Runtime | str) -> None:
        """Run :func:`print_packages` on one node of ``runtime`` (a Runtime or its name), print
        its log, delete the job."""
        if isinstance(runtime, str):
            runtime = self.get_runtime(runtime)
        if not isinstance(runtime, types.Runtime):
            raise ValueError(f"runtime must be a Runtime or a runtime name, got {runtime!r}")
        if runtime.trainer.trainer_type == types.TrainerType.BUILTIN_TRAINER:
            raise ValueError("Cannot get Runtime packages for BuiltinTrainer")
        rt, trainer = self._packages_job(runtime)
        name = self.train(runtime=rt, trainer=trainer)
        try:
            self.wait_for_job_status(name, polling_interval=self.packages_polling_interval)
            print("\n".join(self.get_job_logs(name)))  # upstream prints these
        finally:
            self.delete_job(name)

    def _packages_job(self, runtime: types.Runtime) -> tuple[types.Runtime, types.CustomTrainer]:
        """The runtime and trainer ``get_runtime_packages`` runs."""
        return runtime, types.CustomTrainer(func=print_packages, num_nodes=1)

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
    def delete_job(self, name: str, purge: bool = False) -> None: ...

    def scale_job(self, name: str, num_nodes: int) -> types.TrainJob:
        raise NotImplementedError(f"{type(self).__name__} cannot scale a TrainJob")

    def wait_for_job_status(
        self,
        name: str,
        status: set[str] | None = None,
        timeout: int = 600,
        polling_interval: float = 2,
        callbacks: list[status_mod.Callback] | None = None,
    ) -> types.TrainJob:
        return status_mod.wait_for_job_status(
            self.get_job,
            name,
            set(status) if status is not None else {c.TRAINJOB_COMPLETE},
            timeout,
            polling_interval,
            callbacks,
            reason=self.failure_reason,
        )

    def failure_reason(self, name: str) -> str:
        """Why TrainJob ``name`` failed, as its events say (``client.status``)."""
        return status_mod.failure_from_events(self.get_job_events(name))

    def _runtime_of(self, ref: dict[str, Any], cache: dict[str, types.Runtime]) -> types.Runtime:
        """The runtime a TrainJob's ``runtimeRef`` names, read once per listing (``cache``); a
        deleted or unusable runtime is reported with framework and image Unknown."""
        kind = ref.get("kind") or c.CLUSTER_TRAINING_RUNTIME_KIND
        name = str(ref.get("name") or "")
        key = f"{kind}/{name}"
        if key not in cache:
            try:
                cr = self._referenced_runtime(name, kind)
                cache[key] = runtimes.runtime_from_cr(cr) if cr is not None else _unknown(name)
            except ValueError:
                cache[key] = _unknown(name)
        return cache[key]

    @abc.abstractmethod
    def _referenced_runtime(self, name: str, kind: str) -> dict[str, Any] | None:
        """The runtime object of that name and kind, None when there is none."""

    def _check_step(self, step: str) -> int | None:
        """The N of step ``node-N`` (None for an initializer); ValueError for any other name."""
        if step in (c.DATASET_INITIALIZER, c.MODEL_INITIALIZER):
            return None
        m = NODE_STEP.match(step)
        if not m:
            raise ValueError(
                f"Invalid step {step!r}: use dataset-initializer, model-initializer or node-N"
            )
        return int(m.group(1))

    def resolve_runtime(self, runtime: str | types.Runtime | None) -> types.Runtime:
        """``train``'s runtime argument: a Runtime, a name, or None for the default runtime."""
        if runtime is None:
            return self.get_runtime(c.DEFAULT_TRAINING_RUNTIME)
        if isinstance(runtime, str):
            return self.get_runtime(runtime)
        if isinstance(runtime, types.Runtime):
            return runtime
        raise ValueError(f"runtime must be a Runtime, a runtime name or None, got {runtime!r}")


def _unknown(name: str) -> types.Runtime:
    trainer = types.RuntimeTrainer(
        trainer_type=types.TrainerType.CUSTOM_TRAINER, framework=c.UNKNOWN, image=c.UNKNOWN
    )
    return types.Runtime(name=name, trainer=trainer)


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
    else:  # an environment made by uv has no pip: list what is installed as pip would
        from importlib import metadata

        found = {
            (d.metadata["Name"] or "", d.version) for d in metadata.distributions() if d.metadata
        }
        rows = sorted(found, key=lambda nv: nv[0].lower())
        width = max([len("Package"), *(len(n) for n, _ in rows)])
        vwidth = max([len("Version"), *(len(v) for _, v in rows)])
        print(f"{'Package':<{width}} Version")
        print(f"{'-' * width} {'-' * vwidth}")
        for n, v in rows:
            print(f"{n:<{width}} {v}")
    if shutil.which("nvidia-smi"):
        print("Available GPUs on the single training node")
        smi = subprocess.run(["nvidia-smi"], capture_output=True, text=True, check=False)
        print(smi.stdout)
