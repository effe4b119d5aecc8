"""What the local backend reports about a job: its phase, its pods and its events.

Plain frozen values read from the store by :class:`trainjob.local.executor.LocalExecutor` and
handed to the SDK and the CLI. The TrainJob's own ``status`` keeps upstream's condition types
(Suspended, Complete, Failed); the richer phase (Created, Running, ...) lives here.
"""

from __future__ import annotations

from dataclasses import dataclass, field

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


@dataclass(frozen=True)
class PodState:
    """One pod of one replicatedJob, run here as a process.

    ``job`` is the replicatedJob name, ``index`` the completion index, ``job_index`` the Job's
    index among the replicatedJob's replicas (0 unless ``replicas`` > 1). ``started``/``finished``
    are RFC 3339 timestamps or None; ``restarts`` counts JobSet restarts this pod went through;
    ``message`` says why a pod is not run as a process (for example the sshd-only ``node`` pods
    of an MPI runtime) or why it failed; ``ready`` is the pod's Ready condition: Running, its
    init containers done and its containers passing their readiness probes.
    """

    job: str
    index: int
    name: str
    phase: str = POD_PENDING
    exit_code: int | None = None
    started: str | None = None
    finished: str | None = None
    restarts: int = 0
    job_index: int = 0
    message: str = ""
    ready: bool = False


@dataclass(frozen=True)
class JobState:
    """A job's phase, times and pods. ``reason``/``message`` explain the phase when finished."""

    name: str
    namespace: str
    phase: str
    created: str
    started: str | None = None
    completed: str | None = None
    restarts: int = 0
    reason: str = ""
    message: str = ""
    pods: tuple[PodState, ...] = field(default_factory=tuple)

    @property
    def finished(self) -> bool:
        return self.phase in FINISHED

    def pod(self, job: str, index: int = 0, job_index: int = 0) -> PodState | None:
        for p in self.pods:
            if p.job == job and p.index == index and p.job_index == job_index:
                return p
        return None


@dataclass(frozen=True)
class Event:
    """A Kubernetes-style event: ``type`` Normal|Warning, a CamelCase reason, a sentence."""

    type: str
    reason: str
    message: str
    timestamp: str
    involved_kind: str = "TrainJob"
    involved_name: str = ""


class JobFailedError(TrainJobError, RuntimeError):
    """``wait`` saw the job fail while waiting for other phases (a RuntimeError, as upstream)."""

    def __init__(self, state: JobState) -> None:
        self.state = state
        why = f": {state.reason}: {state.message}" if state.reason else ""
        super().__init__(f"TrainJob {state.namespace}/{state.name} is Failed{why}")
