"""``LocalExecutor``: run TrainJobs on this machine, the API the SDK and the CLI call.

Submitting validates and compiles the TrainJob with the one compiler (field errors before anything
starts), stores the job in the SQLite store under ``$TRAINJOB_HOME`` (default ``~/.trainjob``) and
starts a detached supervisor process (:mod:`trainjob.local.supervisor`) that runs the Plan's JobSet
as local processes and writes status, events and logs. Every other method reads or changes the
store; a supervisor that died is noticed here and its job is marked Failed with a reason.

Callers: ``trainjob.client`` (the local backend of TrainerClient) and ``trainjob.cli.jobs``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

from trainjob.api.trainer import Runtime, TrainJob
from trainjob.local.state import Event, JobState

DEFAULT_NAMESPACE = "default"


class LocalExecutor:
    """Jobs of one ``home`` directory (``$TRAINJOB_HOME``, else ``~/.trainjob``).

    Any number of executors, in any number of processes, may share a home.
    """

    def __init__(self, home: Path | None = None) -> None:
        raise NotImplementedError

    # -- jobs ---------------------------------------------------------------------------------

    def submit(
        self, trainjob: TrainJob, runtimes: Sequence[Runtime] = (), *, cwd: str | None = None
    ) -> TrainJob:
        """Validate, compile, store and start ``trainjob``; return it as stored.

        ``runtimes`` are looked up before the stored and built-in ones. ``cwd`` is where the
        containers' commands run (default: this process's working directory). Raises
        InvalidError / NotFoundError (bad spec, unknown runtime), ConfigError (a command that
        cannot run here) and AlreadyExistsError before anything starts.
        """
        raise NotImplementedError

    def get(self, name: str, namespace: str = DEFAULT_NAMESPACE) -> TrainJob:
        """The stored TrainJob with its status (conditions, jobsStatus) as the cluster shows it."""
        raise NotImplementedError

    def state(self, name: str, namespace: str = DEFAULT_NAMESPACE) -> JobState:
        """The job's phase (Created|Running|Complete|Failed|Suspended), times and pods."""
        raise NotImplementedError

    def list(self, namespace: str | None = None) -> list[TrainJob]:
        """Every stored TrainJob (of ``namespace``, or all), oldest first."""
        raise NotImplementedError

    def states(self, namespace: str | None = None) -> list[JobState]:
        """``state`` of every stored job (without pods), oldest first, in one query."""
        raise NotImplementedError

    def events(self, name: str, namespace: str = DEFAULT_NAMESPACE) -> list[Event]:
        """The job's events, oldest first."""
        raise NotImplementedError

    def logs(
        self,
        name: str,
        namespace: str = DEFAULT_NAMESPACE,
        job: str = "node",
        index: int = 0,
        follow: bool = False,
        *,
        job_index: int = 0,
    ) -> Iterator[str]:
        """Lines (without newline) of one pod's log.

        With ``follow``, waits for a pending pod, yields lines as they are written and ends
        when the pod ends.
        """
        raise NotImplementedError

    def suspend(self, name: str, namespace: str = DEFAULT_NAMESPACE) -> TrainJob:
        """Set ``spec.suspend``: running pods are stopped, the job is Suspended."""
        raise NotImplementedError

    def resume(self, name: str, namespace: str = DEFAULT_NAMESPACE) -> TrainJob:
        """Clear ``spec.suspend``: pods start again from scratch (deadline clock restarts)."""
        raise NotImplementedError

    def delete(self, name: str, namespace: str = DEFAULT_NAMESPACE) -> None:
        """Stop the job's processes and remove it, its logs and its workspace."""
        raise NotImplementedError

    def wait(
        self,
        name: str,
        namespace: str = DEFAULT_NAMESPACE,
        phases: set[str] | frozenset[str] = frozenset({"Complete"}),
        timeout: float | None = None,
        *,
        poll: float = 0.1,
    ) -> JobState:
        """Block until the job's phase is in ``phases``; return its state.

        Raises JobFailedError if it fails and Failed is not in ``phases``, TimeoutError after
        ``timeout`` seconds.
        """
        raise NotImplementedError

    # -- runtimes -----------------------------------------------------------------------------

    def list_runtimes(self) -> list[Runtime]:
        """Built-in ClusterTrainingRuntimes, then stored runtimes (a stored one wins by name)."""
        raise NotImplementedError

    def get_runtime(
        self, name: str, kind: str = "ClusterTrainingRuntime", namespace: str | None = None
    ) -> Runtime:
        """One runtime by name (NotFoundError when absent)."""
        raise NotImplementedError

    def apply_runtime(self, runtime: Runtime) -> Runtime:
        """Store (create or replace) a runtime so later submits can refer to it."""
        raise NotImplementedError
