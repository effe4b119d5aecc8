"""The ``local`` backend: TrainerClient over :class:`trainjob.local.executor.LocalExecutor`.

Jobs are the same TrainJob manifests a cluster would get, run as processes on this machine (one
per pod, multi-node included) by the local executor; this module maps the executor's state to
the SDK's types: steps ``dataset-initializer``, ``model-initializer``, ``node-N`` (for MPI the
launcher is ``node-0`` and the workers ``node-1..``), statuses Created/Running/Complete/Failed.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from typing import Any

from trainjob.client import builder, runtimes, status, types
from trainjob.client import constants as c
from trainjob.client.backends.base import RuntimeBackend
from trainjob.client.config import LocalProcessBackendConfig
from trainjob.client.status import parse_time
from trainjob.errors import AlreadyExistsError, ConfigError, InvalidError, NotFoundError

logger = logging.getLogger(__name__)


class LocalBackend(RuntimeBackend):
    """TrainJobs as local processes; the store is shared with the CLI and other clients."""

    name = "local"
    packages_polling_interval = 1

    def __init__(self, cfg: LocalProcessBackendConfig | None = None, executor: Any = None) -> None:
        self.cfg = cfg or LocalProcessBackendConfig()
        if executor is None:
            from trainjob.local.executor import LocalExecutor

            executor = LocalExecutor(self.cfg.home)
        self.executor = executor
        self.namespace = self.cfg.namespace

    # -- runtimes -----------------------------------------------------------------------------

    def list_runtimes(self) -> list[types.Runtime]:
        out = []
        for rt in self.executor.list_runtimes():
            try:
                out.append(runtimes.runtime_from_cr(rt.to_dict()))
            except ValueError as e:
                logger.warning("skipping runtime %s: %s", rt.metadata.name, e)
        return out

    def get_runtime(self, name: str) -> types.Runtime:
        return runtimes.runtime_from_cr(self._runtime_cr(name).to_dict())

    def _runtime_cr(self, name: str) -> Any:
        try:
            return self.executor.get_runtime(
                name, kind=c.TRAINING_RUNTIME_KIND, namespace=self.namespace
            )
        except NotFoundError:
            pass
        try:
            return self.executor.get_runtime(name, kind=c.CLUSTER_TRAINING_RUNTIME_KIND)
        except NotFoundError as e:
            known = ", ".join(sorted(r.metadata.name or "" for r in self.executor.list_runtimes()))
            raise RuntimeError(f"Runtime {name!r} not found (runtimes: {known})") from e

    # -- jobs ---------------------------------------------------------------------------------

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
        )
        name = builder.job_name(job)
        try:
            self.executor.submit(builder.model(job), cwd=self.cfg.cwd or os.getcwd())
        except InvalidError as e:
            raise ValueError(str(e)) from e
        except NotFoundError as e:
            raise ValueError(str(e)) from e
        except AlreadyExistsError as e:
            raise RuntimeError(f"Failed to create TrainJob: {self.namespace}/{name}: {e}") from e
        except ConfigError as e:
            raise RuntimeError(f"Failed to create TrainJob: {self.namespace}/{name}: {e}") from e
        logger.debug("TrainJob %s/%s has been created", self.namespace, name)
        return name

    def _not_found(self, name: str, e: Exception) -> RuntimeError:
        return RuntimeError(f"TrainJob {self.namespace}/{name} not found")

    def get_job(self, name: str) -> types.TrainJob:
        try:
            tj = self.executor.get(name, self.namespace)
            state = self.executor.state(name, self.namespace)
        except NotFoundError as e:
            raise self._not_found(name, e) from e
        return self._to_sdk(tj.to_dict(), state, {})

    def list_jobs(self, runtime: types.Runtime | None = None) -> list[types.TrainJob]:
        """Two store queries for any number of jobs (``LocalExecutor.summaries``)."""
        cache: dict[str, types.Runtime] = {}
        out = []
        for state, tj in self.executor.summaries(self.namespace):
            ref = (tj.get("spec") or {}).get("runtimeRef") or {}
            if runtime is not None and ref.get("name") != runtime.name:
                continue
            out.append(self._to_sdk(tj, state, cache))
        return out

    def _referenced_runtime(self, name: str, kind: str) -> dict[str, Any] | None:
        ns = self.namespace if kind == c.TRAINING_RUNTIME_KIND else None
        try:
            return dict(self.executor.get_runtime(name, kind=kind, namespace=ns).to_dict())
        except NotFoundError:
            return None

    def _to_sdk(
        self, tj: dict[str, Any], state: Any, cache: dict[str, types.Runtime]
    ) -> types.TrainJob:
        spec = tj.get("spec") or {}
        rt = self._runtime_of(spec.get("runtimeRef") or {}, cache)
        trainer = spec.get("trainer") or {}
        num_nodes = int(trainer.get("numNodes") or rt.trainer.num_nodes)
        devices = runtimes.container_devices(trainer.get("resourcesPerNode"))
        steps = self._steps(state, devices, rt)
        if state.phase in (c.TRAINJOB_COMPLETE, c.TRAINJOB_FAILED):
            job_status = state.phase
        else:
            suspended = state.phase == "Suspended"
            conditions = [{"type": "Suspended", "status": "True"}] if suspended else []
            job_status = status.job_status(conditions, steps, num_nodes)
        return types.TrainJob(
            name=str((tj.get("metadata") or {}).get("name") or state.name),
            runtime=rt,
            steps=steps,
            num_nodes=num_nodes,
            creation_timestamp=parse_time(state.created),
            status=job_status,
        )

    def _steps(
        self,
        state: Any,
        devices: tuple[str, str] | None = None,
        rt: types.Runtime | None = None,
    ) -> list[types.Step]:
        has_launcher = any(p.job == c.LAUNCHER for p in state.pods)
        device = devices or (
            (rt.trainer.device, c.UNKNOWN) if rt and rt.trainer.device != c.UNKNOWN else None
        )
        keyed: list[tuple[int, int, types.Step]] = []
        for pod in state.pods:
            if pod.job == c.DATASET_INITIALIZER or pod.job == c.MODEL_INITIALIZER:
                order = 0 if pod.job == c.DATASET_INITIALIZER else 1
                keyed.append((order, 0, types.Step(pod.job, pod.phase, pod.name)))
                continue
            if pod.job == c.LAUNCHER:
                index = 0
            elif pod.job == c.NODE:
                index = pod.index + 1 if has_launcher else pod.index
            else:
                continue
            step = types.Step(f"{c.NODE}-{index}", pod.phase, pod.name)
            if device:
                step.device, step.device_count = device
            keyed.append((2, index, step))
        keyed.sort(key=lambda k: (k[0], k[1]))
        return [k[2] for k in keyed]

    def _pod_of_step(self, name: str, step: str) -> tuple[str, int]:
        """(replicatedJob, index) of the pod behind ``step``; ValueError when the job has no
        such step (with its steps), RuntimeError when there is no such job."""
        index = self._check_step(step)
        try:
            state = self.executor.state(name, self.namespace)
        except NotFoundError as e:
            raise self._not_found(name, e) from e
        has_launcher = any(p.job == c.LAUNCHER for p in state.pods)
        if index is None:
            pod = (step, 0)
        elif has_launcher:
            pod = (c.LAUNCHER, 0) if index == 0 else (c.NODE, index - 1)
        else:
            pod = (c.NODE, index)
        if state.pods and pod not in {(p.job, p.index) for p in state.pods}:
            steps = ", ".join(s.name for s in self._steps(state))
            raise ValueError(
                f"TrainJob {self.namespace}/{name} has no step {step} (steps: {steps})"
            )
        return pod

    def get_job_logs(
        self, name: str, follow: bool | None = False, step: str = c.NODE + "-0"
    ) -> Iterator[str]:
        job, index = self._pod_of_step(name, step)
        try:
            yield from self.executor.logs(
                name, self.namespace, job=job, index=index, follow=bool(follow)
            )
        except NotFoundError as e:
            raise self._not_found(name, e) from e

    def get_job_events(self, name: str) -> list[types.Event]:
        try:
            events = self.executor.events(name, self.namespace)
        except NotFoundError as e:
            raise self._not_found(name, e) from e
        return [
            types.Event(
                involved_object_kind=ev.involved_kind,
                involved_object_name=ev.involved_name or name,
                message=ev.message,
                reason=ev.reason,
                event_time=parse_time(ev.timestamp),
            )
            for ev in events
        ]

    def delete_job(self, name: str) -> None:
        try:
            self.executor.delete(name, self.namespace)
        except NotFoundError as e:
            raise self._not_found(name, e) from e
        logger.debug("TrainJob %s/%s has been deleted", self.namespace, name)
