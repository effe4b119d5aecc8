"""``SweepExecutor``: where OptimizationJobs (hyperparameter sweeps) run, whatever runs them.

An OptimizationJob's trials are TrainJobs made from its ``trainJobTemplate``
(:mod:`trainjob.optimizer.template`); what to try next and what to stop is decided by the pure
engine (:mod:`trainjob.optimizer.engine`), run in a level-triggered loop by
:mod:`trainjob.optimizer.driver` over the backend's TrainJob :class:`~trainjob.executor.base.
Executor`. A backend keeps the OptimizationJob (spec and status) and runs that loop somewhere
that outlives the client: the local backend in a sweep supervisor process per job with the job
in its SQLite store (:mod:`trainjob.local.client.sweeps`), the container backend the same with trials
run as containers, a cluster as the controller's OptimizationJob reconciler over the CR.

The SDK's ``OptimizerClient`` (:mod:`trainjob.client.optimizer`) and the CLI
(``get optimizationjobs``, ``describe optimizationjob``, ``delete optimizationjob``) sit on this
interface and :attr:`SweepExecutor.trials` (the TrainJob executor its trials run on), so a verb
reads the same on every backend. Errors: :mod:`trainjob.errors`' tree (``NotFoundError``,
``InvalidError``, ``AlreadyExistsError``, ``ConfigError``).
"""

from __future__ import annotations

import abc
import builtins
import time
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from trainjob.core import conditions

if TYPE_CHECKING:
    from trainjob.api.optimization import OptimizationJob
    from trainjob.executor.base import Executor
    from trainjob.executor.model import Event
    from trainjob.workspace.pack import Snapshot

# An OptimizationJob's phase, from its conditions (the SDK's vocabulary, as a TrainJob's).
CREATED = "Created"
RUNNING = "Running"
COMPLETE = "Complete"
FAILED = "Failed"
PHASES = (CREATED, RUNNING, COMPLETE, FAILED)
FINISHED = frozenset({COMPLETE, FAILED})

KIND = "OptimizationJob"
PLURAL = "optimizationjobs"


def phase(status: Mapping[str, Any] | None) -> str:
    """The phase an OptimizationJob's ``status`` (a dict, camelCase) says: Complete or Failed
    once either condition is True, Running while Running is, else Created."""
    conds = (status or {}).get("conditions") or ()
    for type_ in (FAILED, COMPLETE, RUNNING):
        if conditions.is_true(conds, type_):
            return type_
    return CREATED


class SweepExecutor(abc.ABC):
    """Where OptimizationJobs run (see the module docstring)."""

    backend: ClassVar[str] = ""
    """``local``, ``container`` or ``kubernetes``."""

    poll_interval: float = 0.2
    """Seconds between two looks at a job while watching it."""

    @property
    @abc.abstractmethod
    def trials(self) -> Executor:
        """The TrainJob executor the trials run on (their states, logs, events)."""

    @property
    def default_namespace(self) -> str:
        """Where a command without ``-n`` acts (the trials' executor's)."""
        return self.trials.default_namespace

    @abc.abstractmethod
    def create(
        self, job: OptimizationJob, *, cwd: str | None = None, workspace: Snapshot | None = None
    ) -> OptimizationJob:
        """Check ``job`` (its fields; that its first trial would be accepted) and start it; the
        job as stored (named, with a uid). ``cwd``: where a local trial's commands run.
        ``workspace``: the snapshot its trial template's annotations name (``run --workdir``),
        stored where every trial's pods find it, as :meth:`Executor.submit` does for one job."""

    @abc.abstractmethod
    def get(self, name: str, namespace: str) -> OptimizationJob:
        """The OptimizationJob with its status; NotFoundError."""

    @abc.abstractmethod
    def list(self, namespace: str | None = None) -> list[OptimizationJob]:
        """Every OptimizationJob of ``namespace`` (None: of all), oldest first."""

    @abc.abstractmethod
    def delete(self, name: str, namespace: str, *, purge: bool = False) -> None:
        """Stop the job, delete its trials (their outputs kept unless ``purge``) and the job."""

    @abc.abstractmethod
    def events(self, name: str, namespace: str) -> builtins.list[Event]:
        """The job's own events (trials created and stopped, its end), oldest first."""

    def exists(self, name: str, namespace: str) -> bool:
        from trainjob.errors import NotFoundError

        try:
            self.get(name, namespace)
        except NotFoundError:
            return False
        return True

    def watch(self, name: str, namespace: str) -> Iterator[OptimizationJob]:
        """The job now, then again each time its status changes, until it has finished (the
        last one yielded is finished)."""
        last: object = None
        while True:
            job = self.get(name, namespace)
            seen = job.status.to_dict() if job.status is not None else None
            if seen != last:
                last = seen
                yield job
            if phase(seen) in FINISHED:
                return
            time.sleep(self.poll_interval)


TRIAL_DONE = frozenset({"Succeeded", "Failed", "Stopped"})
"""The phases of a trial that has ended."""


def algorithm(job: OptimizationJob) -> str:
    """The job's search algorithm as one reads it: ``grid``, ``tpe (seed 7)``, ``random``."""
    algo = job.spec.search_algorithm
    for name in ("grid", "tpe", "random"):
        chosen = getattr(algo, name, None) if algo is not None else None
        if chosen is not None:
            seed = getattr(chosen, "seed", None)
            return f"{name} (seed {seed})" if seed is not None else name
    return "random"
