"""The job model every executor reports in: a job's phase, its pods and its events.

Plain frozen values (named tuples, and two frozen classes) that :class:`trainjob.executor.base.Executor` implementations (the local
processes of :mod:`trainjob.local`, a cluster through :mod:`trainjob.cluster`) build from what
they run, and that the SDK, the CLI (and the dashboard) read, so each shows a job the same way
whatever runs it. The TrainJob's own ``status`` keeps upstream's condition types (Suspended,
Complete, Failed); the richer phase (Created, Running, ...) lives here.

Kept free of the API models (the TrainJob is carried as its JSON object), so the local supervisor
imports it without loading pydantic.
"""

# No ``from __future__ import annotations`` here: a named tuple's string annotations are each
# compiled (typing.ForwardRef), and the first compile() of a process builds the AST types,
# about 3 ms of every ``trainjob get jobs`` (benchmarks/cli_startup.py).

import time
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, NamedTuple, Self

from trainjob.core import times
from trainjob.errors import TrainJobError

# Job phases (the SDK's vocabulary plus Suspended).
CREATED = "Created"
RUNNING = "Running"
COMPLETE = "Complete"
FAILED = "Failed"
SUSPENDED = "Suspended"
PHASES = (CREATED, RUNNING, COMPLETE, FAILED, SUSPENDED)
FINISHED = frozenset({COMPLETE, FAILED})

# Pod phases (Kubernetes' PodPhase values).
POD_PENDING = "Pending"
POD_RUNNING = "Running"
POD_SUCCEEDED = "Succeeded"
POD_FAILED = "Failed"
POD_PHASES = (POD_PENDING, POD_RUNNING, POD_SUCCEEDED, POD_FAILED)

LOSS_METRICS = ("loss", "train_loss", "training_loss")
"""The metric names a training loss is reported under (the Kubeflow SDK's examples and
transformers' KubeflowCallback use ``loss``)."""

NOT_RUN_LOCALLY = "not run locally"
"""How the message of a pod that the local backend does not run as a process starts (the
sshd-only worker pods of an MPI runtime): it has no log of its own."""


class _Frozen:
    """Instances that cannot be changed once made (as a frozen dataclass's): :meth:`replace`
    makes a changed copy. Plain classes rather than dataclasses: every ``trainjob get jobs``
    imports this module, and six frozen dataclasses (with :mod:`dataclasses`, which imports
    :mod:`inspect`) were about a tenth of its start-up (benchmarks/cli_startup.py)."""

    __slots__: tuple[str, ...] = ()
    _compared: tuple[str, ...] = ()
    """The fields :meth:`__eq__`, :meth:`__hash__` and :meth:`__repr__` read, in order."""

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"cannot assign to field {name!r}: {type(self).__name__} is frozen")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete field {name!r}: {type(self).__name__} is frozen")

    def _set(self, **values: Any) -> None:
        for name, value in values.items():
            object.__setattr__(self, name, value)

    def _key(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in self._compared)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._compared)
        return f"{type(self).__name__}({fields})"

    def __reduce__(self) -> tuple[Any, ...]:  # pickle and copy: __init__ takes every field
        return (type(self), tuple(getattr(self, n) for n in self.__slots__))

    def replace(self, **changes: Any) -> Self:
        """A copy with ``changes`` (``dataclasses.replace``)."""
        out = object.__new__(type(self))
        for name in self.__slots__:
            object.__setattr__(out, name, changes.pop(name, getattr(self, name)))
        if changes:
            raise TypeError(f"{type(self).__name__} has no field {', '.join(changes)}")
        return out


class PodState(_Frozen):
    """One pod of one replicatedJob.

    ``job`` is the replicatedJob name, ``index`` the completion index, ``job_index`` the Job's
    index among the replicatedJob's replicas (0 unless ``replicas`` > 1). ``started``/``finished``
    are RFC 3339 timestamps or None; ``restarts`` counts JobSet restarts this pod went through;
    ``message`` says why a pod is not run (for example the sshd-only ``node`` pods of an MPI
    runtime run locally) or why it failed; ``ready`` is the pod's Ready condition: Running, its
    init containers done and its containers passing their readiness probes. Where the executor
    reads pod specs (a cluster), ``resources`` are the step container's resources (``limits`` and
    ``requests``) and ``env`` its plain-valued variables: the SDK reads devices from them (they
    are left out of equality and repr).
    """

    __slots__ = (  # noqa: RUF023 (the fields, in order: __init__ and replace read them)
        "job", "index", "name", "phase", "exit_code", "started", "finished", "restarts",
        "job_index", "message", "ready", "resources", "env",
    )  # fmt: skip
    _compared = __slots__[:-2]

    job: str
    index: int
    name: str
    phase: str
    exit_code: int | None
    started: str | None
    finished: str | None
    restarts: int
    job_index: int
    message: str
    ready: bool
    resources: Mapping[str, Any]
    env: Mapping[str, str]

    def __init__(
        self, job: str, index: int, name: str, phase: str = POD_PENDING,
        exit_code: int | None = None, started: str | None = None, finished: str | None = None,
        restarts: int = 0, job_index: int = 0, message: str = "", ready: bool = False,
        resources: Mapping[str, Any] | None = None, env: Mapping[str, str] | None = None,
    ) -> None:  # fmt: skip
        self._set(
            job=job, index=index, name=name, phase=phase, exit_code=exit_code, started=started,
            finished=finished, restarts=restarts, job_index=job_index, message=message,
            ready=ready, resources={} if resources is None else resources,
            env={} if env is None else env,
        )  # fmt: skip

    @property
    def step(self) -> tuple[str, int, int]:
        """(replicatedJob, completion index, Job index): which pod of the JobSet this is."""
        return self.job, self.index, self.job_index

    @property
    def runs(self) -> bool:
        """Whether the pod runs a process with a log of its own."""
        return not self.message.startswith(NOT_RUN_LOCALLY)


class MetricSample(NamedTuple):
    """One progress report of a job (a ``status.trainerStatus`` the job posted, KEP-2779): when
    it was made and what it said. ``metrics`` keeps upstream's strings (``{"loss": "0.52"}``):
    a value that is not a number is kept too, a chart skips it."""

    time: str
    metrics: Mapping[str, str] = MappingProxyType({})
    progress_percentage: int | None = None
    estimated_remaining_seconds: int | None = None

    def number(self, name: str) -> float | None:
        """The metric ``name`` as a finite float, or None (absent, not a number)."""
        try:
            value = float(self.metrics[name])
        except (KeyError, ValueError):
            return None
        return value if value == value and abs(value) != float("inf") else None

    def remaining(self, now: float | None = None) -> int | None:
        """The ETA counted down since the report (never below 0); None when none was given."""
        if self.estimated_remaining_seconds is None:
            return None
        at = times.parse(self.time)
        gone = max(0.0, (time.time() if now is None else now) - at) if at is not None else 0.0
        return max(0, int(self.estimated_remaining_seconds - gone))

    @property
    def loss(self) -> str | None:
        """The training loss as reported (``loss``, else ``train_loss``), None without."""
        for name in LOSS_METRICS:
            if name in self.metrics:
                return self.metrics[name]
        return None


class JobSummary(NamedTuple):
    """What a listing shows of a job's TrainJob (its runtime, nodes, latest progress report),
    for an executor that keeps these beside the object (the local store's listing columns): a
    listing of many jobs then reads them without parsing a TrainJob."""

    runtime_name: str = ""
    num_nodes: int | None = None
    progress: MetricSample | None = None


class JobState(_Frozen):
    """A job's phase, times and pods. ``reason``/``message`` explain the phase when finished.

    ``trainjob`` is the TrainJob object as the executor stores it (metadata, spec, status), empty
    where a listing did not read it. ``summary``, where the executor sets it, answers
    :attr:`runtime_name`, :attr:`num_nodes` and :attr:`progress` without reading ``trainjob``.
    Both are left out of equality and repr.
    """

    __slots__ = (  # noqa: RUF023 (the fields, in order: __init__ and replace read them)
        "name", "namespace", "phase", "created", "started", "completed", "restarts", "reason",
        "message", "pods", "trainjob", "summary",
    )  # fmt: skip
    _compared = __slots__[:-2]

    name: str
    namespace: str
    phase: str
    created: str
    started: str | None
    completed: str | None
    restarts: int
    reason: str
    message: str
    pods: tuple[PodState, ...]
    trainjob: Mapping[str, Any]
    summary: JobSummary | None

    def __init__(
        self, name: str, namespace: str, phase: str, created: str, started: str | None = None,
        completed: str | None = None, restarts: int = 0, reason: str = "", message: str = "",
        pods: tuple[PodState, ...] = (), trainjob: Mapping[str, Any] | None = None,
        summary: JobSummary | None = None,
    ) -> None:  # fmt: skip
        self._set(
            name=name, namespace=namespace, phase=phase, created=created, started=started,
            completed=completed, restarts=restarts, reason=reason, message=message, pods=pods,
            trainjob={} if trainjob is None else trainjob, summary=summary,
        )  # fmt: skip

    @property
    def finished(self) -> bool:
        return self.phase in FINISHED

    def pod(self, job: str, index: int = 0, job_index: int = 0) -> PodState | None:
        for p in self.pods:
            if p.job == job and p.index == index and p.job_index == job_index:
                return p
        return None

    @property
    def spec(self) -> Mapping[str, Any]:
        return self.trainjob.get("spec") or {}

    @property
    def runtime_name(self) -> str:
        if self.summary is not None:
            return self.summary.runtime_name
        return str((self.spec.get("runtimeRef") or {}).get("name") or "")

    @property
    def progress(self) -> MetricSample | None:
        """What the training last reported (``status.trainerStatus``), None before any report."""
        if self.summary is not None:
            return self.summary.progress
        return trainer_status_sample(self.trainjob)

    @property
    def num_nodes(self) -> int | None:
        """``spec.trainer.numNodes``, None when the TrainJob leaves it to its runtime."""
        if self.summary is not None:
            return self.summary.num_nodes
        value = (self.spec.get("trainer") or {}).get("numNodes")
        return int(value) if value is not None else None


class Output(NamedTuple):
    """Something a job produced that outlives it (``trainjob delete`` and ``run --replace`` keep
    it; ``delete --purge`` removes it): ``name`` is the volume (or ``output_dir``, the trainer's
    output directory inside one), ``location`` where it is (a directory on this machine, or
    ``persistentvolumeclaim/NAME`` on a cluster), ``description`` what it holds."""

    name: str
    location: str
    description: str = ""


class Event(NamedTuple):
    """A Kubernetes-style event: ``type`` Normal|Warning, a CamelCase reason, a sentence."""

    type: str
    reason: str
    message: str
    timestamp: str
    involved_kind: str = "TrainJob"
    involved_name: str = ""


def trainer_status_sample(trainjob: Mapping[str, Any]) -> MetricSample | None:
    """The latest report held in a TrainJob object's ``status.trainerStatus`` (None: none yet)."""
    ts = (trainjob.get("status") or {}).get("trainerStatus")
    if not isinstance(ts, Mapping):
        return None
    metrics = {
        str(m.get("name")): str(m.get("value"))
        for m in ts.get("metrics") or ()
        if isinstance(m, Mapping) and m.get("name") is not None
    }
    return MetricSample(
        time=str(ts.get("lastUpdatedTime") or ""),
        metrics=metrics,
        progress_percentage=ts.get("progressPercentage"),
        estimated_remaining_seconds=ts.get("estimatedRemainingSeconds"),
    )


class JobFailedError(TrainJobError, RuntimeError):
    """``wait`` saw the job fail while waiting for other phases (a RuntimeError, as upstream)."""

    def __init__(self, state: JobState) -> None:
        self.state = state
        why = f": {state.reason}: {state.message}" if state.reason else ""
        super().__init__(f"TrainJob {state.namespace}/{state.name} is Failed{why}")
