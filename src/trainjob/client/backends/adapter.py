"""``ExecutorBackend``: TrainerClient's verbs over one :class:`~trainjob.executor.base.Executor`.

Both backends of the SDK are this adapter over the executor the CLI uses too — the local one over
:class:`trainjob.local.client.executor.LocalExecutor`, the kubernetes one over
:class:`trainjob.cluster.executor.KubernetesExecutor` — so ``get_job``, ``list_jobs``,
``get_job_logs`` (followed across restarts), ``get_job_events`` and ``delete_job`` report and act
the same way everywhere. What a backend adds is small: how it builds and submits a TrainJob and how
its errors read (:meth:`ExecutorBackend._errors`, upstream's wording for each backend).
"""

from __future__ import annotations

import abc
import logging
from collections.abc import Iterator
from contextlib import AbstractContextManager
from typing import Any

from trainjob.api.trainer import TrainingRuntime
from trainjob.client import constants as c
from trainjob.client import runtimes, status, types
from trainjob.client import steps as sdk_steps
from trainjob.client.backends.base import RuntimeBackend
from trainjob.client.status import parse_time
from trainjob.errors import NotFoundError
from trainjob.executor import triage
from trainjob.executor.base import Executor
from trainjob.executor.model import FAILED, POD_PENDING, SUSPENDED, JobState

logger = logging.getLogger(__name__)


class ExecutorBackend(RuntimeBackend):
    """The SDK's verbs over ``self.executor`` (see the module docstring)."""

    executor: Executor

    @abc.abstractmethod
    def _errors(self, what: str, name: str | None = None) -> AbstractContextManager[None]:
        """Raise the SDK's errors for the executor's while doing ``what`` (to job ``name``)."""

    # -- runtimes -------------------------------------------------------------------------------

    def list_runtimes(self) -> list[types.Runtime]:
        """TrainingRuntimes of this namespace, then ClusterTrainingRuntimes; a runtime the SDK
        cannot use (no framework label, no trainer container) is skipped with a warning."""
        with self._errors("list runtimes"):
            found = self.executor.list_runtimes(self.namespace)
        ordered = [r for r in found if isinstance(r, TrainingRuntime)] + [
            r for r in found if not isinstance(r, TrainingRuntime)
        ]
        out = []
        for rt in ordered:
            if c.RUNTIME_FRAMEWORK_LABEL not in (rt.metadata.labels or {}):
                logger.warning(  # upstream's words
                    "Runtime %s must have %s label.", rt.metadata.name, c.RUNTIME_FRAMEWORK_LABEL
                )
                continue
            try:
                out.append(runtimes.runtime_from_cr(rt.to_dict()))
            except ValueError as e:
                logger.warning("skipping runtime %s: %s", rt.metadata.name, e)
        return out

    def get_runtime(self, name: str) -> types.Runtime:
        try:
            return runtimes.runtime_from_cr(self._runtime_cr(name))
        except ValueError as e:
            raise RuntimeError(str(e)) from e

    def _runtime_cr(self, name: str, kind: str | None = None) -> dict[str, Any]:
        """The runtime object: this namespace's TrainingRuntime, else the ClusterTrainingRuntime
        of that name (or only the given ``kind``)."""
        if kind in (None, c.TRAINING_RUNTIME_KIND):
            try:
                with self._errors(f"get {c.TRAINING_RUNTIME_PLURAL}: {self.namespace}/{name}"):
                    rt = self.executor.get_runtime(name, c.TRAINING_RUNTIME_KIND, self.namespace)
                return dict(rt.to_dict())
            except RuntimeError as e:
                # upstream's rule: the ClusterTrainingRuntime only when there is no
                # TrainingRuntime; a 403 is an error (which runtime wins is unknown then)
                if kind == c.TRAINING_RUNTIME_KIND or not isinstance(e.__cause__, NotFoundError):
                    raise
        with self._errors(f"get {c.CLUSTER_TRAINING_RUNTIME_PLURAL}: {name}"):
            return dict(self.executor.get_runtime(name, c.CLUSTER_TRAINING_RUNTIME_KIND).to_dict())

    def _referenced_runtime(self, name: str, kind: str) -> dict[str, Any] | None:
        try:
            return self._runtime_cr(name, kind)
        except RuntimeError as e:
            if not isinstance(e.__cause__, NotFoundError):
                raise
            return None

    # -- jobs -----------------------------------------------------------------------------------

    def get_job(self, name: str) -> types.TrainJob:
        with self._errors(f"get {c.TRAINJOB_KIND}: {self.namespace}/{name}", name):
            state = self.executor.state(name, self.namespace)
            kept = self.executor.outputs(name, self.namespace)
        job = self._to_sdk(state, {})
        job.outputs = {o.name: o.location for o in kept}
        return job

    def list_jobs(self, runtime: types.Runtime | None = None) -> list[types.TrainJob]:
        """A fixed number of reads for any number of jobs (``Executor.states``)."""
        with self._errors(f"list {c.TRAINJOB_KIND}s in namespace: {self.namespace}"):
            states = self.executor.states(self.namespace)
        cache: dict[str, types.Runtime] = {}
        return [
            self._to_sdk(s, cache)
            for s in states
            if runtime is None or s.runtime_name == runtime.name
        ]

    def _to_sdk(self, state: JobState, cache: dict[str, types.Runtime]) -> types.TrainJob:
        rt = self._runtime_of(state.spec.get("runtimeRef") or {}, cache)
        num_nodes = state.num_nodes or rt.trainer.num_nodes
        steps = sdk_steps.steps(state, rt)
        if state.finished:
            job_status = state.phase
        else:
            conditions = list((state.trainjob.get("status") or {}).get("conditions") or [])
            if state.phase == SUSPENDED:
                conditions.append({"type": "Suspended", "status": "True"})
            job_status = status.job_status(conditions, steps, num_nodes)
        return types.TrainJob(
            name=state.name,
            runtime=rt,
            steps=steps,
            num_nodes=int(num_nodes),
            creation_timestamp=parse_time(state.created),
            status=job_status,
            trainer_status=_trainer_status(state),
        )

    def _pod_of_step(self, name: str, step: str) -> tuple[str, int, JobState]:
        """(replicatedJob, index) of the pod behind ``step``, and the job's state; ValueError
        when the job has no such step (naming its steps), RuntimeError when there is no job."""
        index = self._check_step(step)
        with self._errors(f"get {c.TRAINJOB_KIND}: {self.namespace}/{name}", name):
            state = self.executor.state(name, self.namespace)
        rt = self._runtime_of(state.spec.get("runtimeRef") or {}, {})
        mpi = sdk_steps.is_mpi(state, rt)
        job, pod_index = sdk_steps.pod_of(step, mpi)
        nodes = state.num_nodes or rt.trainer.num_nodes
        count = nodes + (1 if mpi else 0)
        if index is not None and index >= count:
            raise ValueError(
                f"TrainJob {self.namespace}/{name} has no step {step}: it has "
                f"{nodes} nodes (node-0..node-{count - 1})"
            )
        if state.pods and not any(p.job == job and p.index == pod_index for p in state.pods):
            raise ValueError(
                f"TrainJob {self.namespace}/{name} has no step {step} "
                f"(steps: {sdk_steps.known(state, rt)})"
            )
        return job, pod_index, state

    def get_job_logs(
        self, name: str, follow: bool | None = False, step: str = c.NODE + "-0"
    ) -> Iterator[str]:
        job, index, state = self._pod_of_step(name, step)
        pod = state.pod(job, index)
        if not follow and (pod is None or pod.phase == POD_PENDING):
            return  # nothing written yet (upstream: no log of a step that has not started)
        with self._errors(f"read logs for {c.TRAINJOB_KIND} {self.namespace}/{name}", name):
            yield from self.executor.logs(name, self.namespace, job, index, follow=bool(follow))

    def get_job_events(self, name: str) -> list[types.Event]:
        with self._errors(f"get {c.TRAINJOB_KIND} events: {self.namespace}/{name}", name):
            events = self.executor.events(name, self.namespace)
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

    def failure_reason(self, name: str) -> str:
        """The job's Failed verdict (upstream's controller records no event for it), then what
        its events add (the first pod that failed)."""
        with self._errors(f"get {c.TRAINJOB_KIND}: {self.namespace}/{name}", name):
            state = self.executor.state(name, self.namespace)
        verdict = (state.message or state.reason) if state.phase == FAILED else ""
        failure = self.executor.failure(name, self.namespace, state)
        if failure is not None:  # the first failed step and rank, how, its last log lines
            said = triage.says_first_failed(verdict)
            return "\n".join(
                [verdict if said else f"{verdict}; {failure.summary()}"]
                + ([failure.tail_text()] if failure.tail else [])
            )
        events = status.failure_from_events(self.get_job_events(name))
        if verdict and verdict not in events:
            return f"{verdict}; {events}" if events else verdict
        return events

    def scale_job(self, name: str, num_nodes: int) -> types.TrainJob:
        with self._errors(f"scale {c.TRAINJOB_KIND}: {self.namespace}/{name}", name):
            self.executor.scale(name, self.namespace, num_nodes)
        return self.get_job(name)

    def delete_job(self, name: str, purge: bool = False) -> None:
        with self._errors(f"delete {c.TRAINJOB_KIND}: {self.namespace}/{name}", name):
            if purge:
                for o in self.executor.outputs(name, self.namespace):
                    if o.name != "output_dir":
                        logger.info("removing %s (%s)", o.location, o.description)
            self.executor.delete(name, self.namespace, purge=purge)
        logger.debug("%s %s/%s has been deleted", c.TRAINJOB_KIND, self.namespace, name)


def _trainer_status(state: JobState) -> types.TrainerStatus | None:
    p = state.progress
    if p is None:
        return None
    return types.TrainerStatus(
        progress_percentage=p.progress_percentage,
        estimated_remaining_seconds=p.estimated_remaining_seconds,
        metrics=dict(p.metrics),
        last_updated_time=parse_time(p.time) if p.time else None,
    )
