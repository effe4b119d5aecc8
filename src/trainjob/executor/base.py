"""``Executor``: the one interface behind which a TrainJob runs, whatever runs it.

Implemented once for this machine (:class:`trainjob.local.client.executor.LocalExecutor`: processes, a
SQLite store) and once for a cluster (:class:`trainjob.cluster.executor.KubernetesExecutor`: the
apiserver, where trainjob's or upstream's controller and JobSet run the job). The SDK's backends
(:mod:`trainjob.client.backends`) and the CLI (:mod:`trainjob.cli.jobs`) are thin adapters over
it, so a verb — submit, get, describe, events, logs (followed across restarts), watch, suspend,
resume, delete — behaves the same from both front ends on every backend.

An implementation provides the abstract methods; waiting, watching and reading every pod's log at
once are built here on top of them, once. Errors are :mod:`trainjob.errors`' tree
(``NotFoundError``, ``InvalidError``, ``AlreadyExistsError``, ``ConfigError``) and, on a cluster,
the apiserver's (:mod:`trainjob.kube.errors`, which subclass them where they mean the same).
"""

from __future__ import annotations

import abc
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from trainjob.api import phases
from trainjob.executor import model
from trainjob.executor.model import (
    Event,
    JobFailedError,
    JobState,
    MetricSample,
    Output,
    PodState,
)

if TYPE_CHECKING:
    from trainjob.api.trainer import Runtime, TrainJob
    from trainjob.executor import triage
    from trainjob.workspace.pack import Snapshot


class Executor(abc.ABC):
    """Where TrainJobs run: this machine or a cluster (see the module docstring)."""

    backend: ClassVar[str] = ""
    """``local`` or ``kubernetes``: what the CLI's ``--backend`` and the SDK call it."""

    keeps_metric_history: ClassVar[bool] = False
    """Whether :meth:`metric_history` holds every report a job made (the local store) or only
    the latest (a cluster, as upstream: a viewer keeps the points it saw)."""

    poll_interval: float = 0.2
    """Seconds between two looks at a job while waiting or watching (a cluster is asked less
    often: each look is a few API reads)."""

    @property
    @abc.abstractmethod
    def default_namespace(self) -> str:
        """Where a command without ``-n`` acts: ``default`` here, the kubeconfig context's
        namespace on a cluster."""

    # -- jobs -----------------------------------------------------------------------------------

    @abc.abstractmethod
    def submit(
        self,
        trainjob: TrainJob,
        runtimes: Sequence[Runtime] = (),
        *,
        cwd: str | None = None,
        workspace: Snapshot | None = None,
    ) -> TrainJob:
        """Check ``trainjob`` against its runtime (``runtimes`` are looked up first) and start it;
        the TrainJob as stored. Field errors come before anything is created. ``cwd``: where a
        local job's commands run (ignored on a cluster). ``workspace``: the snapshot that the
        TrainJob's annotations name (:mod:`trainjob.workspace`), stored where its pods find it."""

    @abc.abstractmethod
    def check(
        self, trainjob: TrainJob, runtimes: Sequence[Runtime] = (), *, cwd: str | None = None
    ) -> None:
        """Every check :meth:`submit` makes, without creating or starting anything (so that a
        file of several TrainJobs is refused whole when one is invalid)."""

    @abc.abstractmethod
    def exists(self, name: str, namespace: str) -> bool:
        """Whether a TrainJob of that name exists (running or finished)."""

    @abc.abstractmethod
    def get(self, name: str, namespace: str) -> TrainJob:
        """The TrainJob with its status."""

    @abc.abstractmethod
    def state(self, name: str, namespace: str) -> JobState:
        """The job's phase, times and pods, with its TrainJob object."""

    @abc.abstractmethod
    def states(self, namespace: str | None = None, *, pods: bool = True) -> list[JobState]:
        """Every job of ``namespace`` (None: all namespaces), oldest first, each with its TrainJob
        object and, with ``pods``, its pods: a listing in a fixed number of reads, not a few per
        job."""

    @abc.abstractmethod
    def events(self, name: str, namespace: str) -> list[Event]:
        """The job's events (its own, its JobSet's, Jobs', PodGroups' and pods'), oldest first."""

    @abc.abstractmethod
    def logs(
        self,
        name: str,
        namespace: str,
        job: str = "node",
        index: int = 0,
        follow: bool = False,
        *,
        job_index: int = 0,
        tail: int | None = None,
        previous: bool = False,
        timestamps: bool = False,
    ) -> Iterator[str]:
        """Lines (without newline) of one pod's log. With ``follow``: waits for a pending pod,
        yields lines as they come, goes on with the pod that takes over the step after a restart
        (backoffLimit, a JobSet restart, a resume) and ends when the step ends or the job
        finishes. NotFoundError names the job's steps when it has no such pod.

        As ``kubectl logs``: ``tail`` starts at the last N lines (then follows, with ``follow``);
        ``previous`` reads the step's attempt before its last restart; ``timestamps`` prefixes
        each line with when it was written (RFC 3339)."""

    @abc.abstractmethod
    def suspend(self, name: str, namespace: str) -> TrainJob:
        """Set ``spec.suspend``: running pods stop, the job is Suspended."""

    @abc.abstractmethod
    def resume(self, name: str, namespace: str) -> TrainJob:
        """Clear ``spec.suspend``: the pods start again."""

    def annotate(
        self, name: str, namespace: str, annotations: Mapping[str, str | None]
    ) -> TrainJob:
        """Set the TrainJob's ``metadata.annotations`` (a None value removes one), as a merge
        patch: how a sweep marks the trial it stops, and why (``optimizer.driver``)."""
        raise NotImplementedError(f"the {self.backend} backend cannot annotate a TrainJob")

    def scale(self, name: str, namespace: str, num_nodes: int) -> TrainJob:
        """Set an elastic job's node count (KEP-2903), within its elasticPolicy's bounds."""
        from trainjob.errors import TrainJobError

        raise TrainJobError(f"the {self.backend or 'this'} backend cannot scale a TrainJob yet")

    @abc.abstractmethod
    def delete(self, name: str, namespace: str, *, purge: bool = False) -> None:
        """Stop the job's pods and remove the job; its outputs (``outputs``) stay unless
        ``purge``."""

    def metric_history(self, name: str, namespace: str, *, since: int = 0) -> list[MetricSample]:
        """The job's progress reports, oldest first, without the first ``since`` (a follower
        asks for what came after the ones it has): what the dashboard's curves are drawn from.

        This default holds the latest report only (``status.trainerStatus``, all a cluster
        keeps, as upstream; :attr:`keeps_metric_history` is False); an executor that keeps every
        report a job made (the local store) overrides it and sets that flag."""
        sample = model.trainer_status_sample(self.state(name, namespace).trainjob)
        return [sample][since:] if sample is not None else []

    def failure(
        self, name: str, namespace: str, state: JobState | None = None
    ) -> triage.Failure | None:
        """Why a Failed job failed (:mod:`trainjob.executor.triage`): the step and rank that
        failed first, its exit code or signal, its last log lines; None unless Failed."""
        from trainjob.executor import triage  # here: a listing never reads a failure

        s = state if state is not None else self.state(name, namespace)
        return triage.failure(
            s,
            lambda p: self.logs(
                name, namespace, p.job, p.index, job_index=p.job_index, tail=triage.TAIL_LINES
            ),
        )

    def log_location(self, name: str, namespace: str) -> str | None:
        """Where the job's logs are kept, when they are files a user can open (``describe``)."""
        return None

    def outputs(self, name: str, namespace: str) -> tuple[Output, ...]:
        """What the job produced that outlives it (``delete`` keeps it; ``purge`` removes it):
        the trainer's ``output_dir`` first where known, then each kept volume."""
        return ()

    # -- runtimes -------------------------------------------------------------------------------

    @abc.abstractmethod
    def list_runtimes(self, namespace: str | None = None) -> list[Runtime]:
        """Every ClusterTrainingRuntime, and the TrainingRuntimes of ``namespace`` (None: of
        every namespace)."""

    @abc.abstractmethod
    def get_runtime(self, name: str, kind: str, namespace: str | None = None) -> Runtime:
        """One runtime by kind and name (a TrainingRuntime's ``namespace``); NotFoundError."""

    def runtime_objects(self, namespace: str | None = None) -> list[Mapping[str, Any]]:
        """:meth:`list_runtimes` as plain objects (what ``get runtimes`` reads for its table):
        an executor that has them without building the models overrides it (the local one)."""
        from trainjob.api.base import to_dict

        return [to_dict(r) for r in self.list_runtimes(namespace)]

    # -- built on the above, once ---------------------------------------------------------------

    def watch(self, name: str, namespace: str) -> Iterator[JobState]:
        """The job's state now, then again each time its phase, restarts or a pod's phase
        changes, until it has finished (the last state yielded is the finished one)."""
        last: tuple[object, ...] | None = None
        while True:
            s = self.state(name, namespace)
            seen = (s.phase, s.restarts, tuple((p.step, p.phase) for p in s.pods))
            if seen != last:
                last = seen
                yield s
            if s.finished:
                return
            time.sleep(self.poll_interval)

    def wait(
        self,
        name: str,
        namespace: str = "default",
        phases: set[str] | frozenset[str] = frozenset({model.COMPLETE}),
        timeout: float | None = None,
        *,
        until: Callable[[JobState], bool] | None = None,
        poll: float | None = None,
    ) -> JobState:
        """Block until the job's phase is in ``phases`` (or ``until`` holds); return its state.

        Raises JobFailedError if it fails while Failed is not wanted (and ``until`` does not
        hold), TimeoutError when it Completed instead or after ``timeout`` seconds.
        """
        unknown = set(phases) - set(model.PHASES)
        if unknown:
            raise ValueError(f"unknown phases {sorted(unknown)}: expected some of {model.PHASES}")
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            s = self.state(name, namespace)
            if s.phase in phases or (until is not None and until(s)):
                return s
            if s.phase == model.FAILED:
                raise JobFailedError(s)
            if s.phase == model.COMPLETE:
                raise TimeoutError(
                    f"TrainJob {namespace}/{name} is Complete and will never be "
                    f"{' or '.join(sorted(phases))}"
                )
            if deadline is not None and time.monotonic() >= deadline:
                raise TimeoutError(
                    f"timed out after {timeout}s waiting for TrainJob {namespace}/{name} to be "
                    f"{' or '.join(sorted(phases))} (it is {s.phase})"
                )
            time.sleep(self.poll_interval if poll is None else poll)

    def wait_gone(self, name: str, namespace: str, timeout: float = 60.0) -> None:
        """Wait until a deleted TrainJob no longer exists (its finalizers, its processes)."""
        deadline = time.monotonic() + timeout
        while self.exists(name, namespace):
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"TrainJob {namespace}/{name} is still being deleted after {timeout:.0f}s"
                )
            time.sleep(min(0.5, self.poll_interval))

    def watch_states(
        self, namespace: str | None = None, *, pods: bool = False
    ) -> Iterator[list[JobState]]:
        """Every job's state now, then, each time any job's phase, phase condition (a live
        job's: :mod:`trainjob.api.phases`), restarts or progress report change (or a job
        appears), the jobs that changed; forever (the caller stops reading)."""
        last: dict[tuple[str, str], tuple[object, ...]] = {}
        first = True
        while True:
            changed = []
            for s in self.states(namespace, pods=pods):
                key, seen = (s.namespace, s.name), _watched(s)
                if first or last.get(key) != seen:
                    changed.append(s)
                last[key] = seen
            if first or changed:
                yield changed
            first = False
            time.sleep(max(self.poll_interval, 0.5))

    def all_logs(
        self,
        state: JobState,
        follow: bool = False,
        *,
        opener: Callable[[], Executor] | None = None,
        tail: int | None = None,
        timestamps: bool = False,
    ) -> Iterator[tuple[PodState, str]]:
        """Every pod's log lines with the pod they come from: one pod after the other, or with
        ``follow`` as the lines come, each pod read by its own thread (a pending pod is waited
        for). ``opener`` gives each thread its own executor where one must not be shared across
        threads (the local store's connection). ``tail`` and ``timestamps``: each pod's, as
        :meth:`logs`."""
        pods = [p for p in state.pods if p.runs]
        if not follow:
            for p in pods:
                for line in self.logs(
                    state.name,
                    state.namespace,
                    p.job,
                    p.index,
                    job_index=p.job_index,
                    tail=tail,
                    timestamps=timestamps,
                ):
                    yield p, line
            return
        import queue  # here, with threading: only a follow of several pods needs them
        import threading

        lines: queue.Queue[tuple[PodState, str] | BaseException | None] = queue.Queue()

        def read(p: PodState) -> None:
            try:
                own = opener() if opener is not None else self
                for line in own.logs(
                    state.name,
                    state.namespace,
                    p.job,
                    p.index,
                    follow=True,
                    job_index=p.job_index,
                    tail=tail,
                    timestamps=timestamps,
                ):
                    lines.put((p, line))
            except BaseException as e:  # handed to the reading thread, which raises it
                lines.put(e)
            finally:
                lines.put(None)

        for p in pods:
            threading.Thread(target=read, args=(p,), name=f"logs-{p.name}", daemon=True).start()
        running = len(pods)
        while running:
            item = lines.get()
            if item is None:
                running -= 1
            elif isinstance(item, BaseException):
                raise item
            else:
                yield item


def _watched(s: JobState) -> tuple[object, ...]:
    """What a change of makes :meth:`Executor.watch_states` report a job again."""
    report = s.progress
    doing = None
    if not s.finished:
        now = phases.current((s.trainjob.get("status") or {}).get("conditions"))
        doing = now.type if now else None
    # a report's time is to the second (metav1.Time): two in one second differ in what they say
    said = (
        (report.time, report.progress_percentage, report.estimated_remaining_seconds, report.loss)
        if report
        else None
    )
    return (s.phase, s.restarts, doing, said)
