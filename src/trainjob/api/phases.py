"""trainjob's phase conditions: Queued, Initializing, Running, Restarting, with reasons.

Upstream's TrainJob conditions (Suspended, Complete, Failed) say nothing between "created" and
"finished", and after a Kueue resume upstream still shows ``Suspended`` (False) while the pods run.
trainjob adds one condition that says what a live TrainJob is doing, computed the same way on both
backends from what a JobSet reports (``status.jobsStatus``, JobSet's ``replicatedJobsStatus``
counts of Jobs; ``status.restarts``): the controller reads the JobSet's, the local supervisor
counts its pods the same way. Upstream's conditions are never renamed or changed.

The shape is chosen for upstream's clients. The Kubeflow SDK 0.5.0 computes ``get_job().status``
so: ``Complete``/``Failed`` from a True condition of that type; only when the TrainJob has *no
condition at all* does it look at the pods (``Running`` once every node pod runs); any condition
else leaves it at ``Created``. So:

- at most one phase condition is present, with status True, only while its phase holds; it is
  removed when the phase ends (never left as False), and a finished TrainJob has none: its
  conditions are upstream's exactly;
- Queued, Initializing and Restarting hold only while the SDK reads ``Created`` anyway (suspended;
  the trainer pods not all running);
- ``Running`` is written only when the TrainJob already holds another condition (after a resume,
  from Kueue or the user: where upstream's SDK reads ``Created`` whatever trainjob adds, and
  ``kubectl get``'s State column, the last condition's type, said ``Suspended``). A TrainJob never
  suspended keeps no condition while it runs, so the SDK's ``wait_for_job_status({"Running"})``
  still returns (``tests/cluster/test_kubeflow_sdk.py``).

Readers that want the phase in every case (``describe``, ``get jobs``, the dashboard) use
:mod:`trainjob.executor.phases`, which falls back to the pods.
"""

# No ``from __future__ import annotations`` here: a named tuple's string annotations are each
# compiled (typing.ForwardRef), and the first compile() of a process builds the AST types,
# about 3 ms of every ``trainjob get jobs`` (benchmarks/cli_startup.py).

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

from trainjob.api import constants as c
from trainjob.core import conditions as cond

CONDITION_QUEUED = "Queued"
CONDITION_INITIALIZING = "Initializing"
CONDITION_RUNNING = "Running"
CONDITION_RESTARTING = "Restarting"
PHASE_CONDITIONS = (
    CONDITION_QUEUED,
    CONDITION_INITIALIZING,
    CONDITION_RUNNING,
    CONDITION_RESTARTING,
)

REASON_QUEUED_BY_KUEUE = "QueuedByKueue"
REASON_WAITING_FOR_RESOURCES = "WaitingForResources"
"""Queued on the local backend: this machine's CPUs or memory are taken by the jobs that run
(:mod:`trainjob.local.job.capacity`)."""
REASON_SUSPENDED = "Suspended"
REASON_INITIALIZER_RUNNING = "InitializerRunning"
REASON_INITIALIZER_PENDING = "InitializerPending"
REASON_ALL_TRAINER_PODS_RUNNING = "AllTrainerPodsRunning"
REASON_JOBSET_RESTARTING = "JobSetRestarting"

KUEUE_QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
_INITIALIZERS = (c.ANCESTOR_DATASET_INITIALIZER, c.ANCESTOR_MODEL_INITIALIZER)

Obj = Mapping[str, Any]


class Phase(NamedTuple):
    type: str
    reason: str
    message: str


def _replicated_jobs(jobset: Obj) -> list[tuple[str, int, bool]]:
    """(name, Jobs expected, is an initializer) of each replicated job of ``jobset``."""
    out = []
    for rj in (jobset.get("spec") or {}).get("replicatedJobs") or ():
        labels = ((rj.get("template") or {}).get("metadata") or {}).get("labels") or {}
        name = str(rj.get("name", ""))
        init = labels.get(c.LABEL_ANCESTOR, name) in _INITIALIZERS
        out.append((name, int(rj.get("replicas") or 1), init))
    return out


def phase(
    conditions: Iterable[Obj],
    jobset: Obj | None,
    jobs: Sequence[Obj] | None,
    *,
    suspended: bool,
    queue: str | None = None,
    restarts: int = 0,
) -> Phase | None:
    """The phase condition a TrainJob should carry now (None: none).

    ``jobset``: the JobSet (its spec says which replicated jobs are initializers and how many Jobs
    each has; None before it exists); ``jobs``: ``status.jobsStatus``; ``restarts``: the JobSet's
    ``status.restarts``; ``queue``: the TrainJob's Kueue queue label.
    """
    conds = list(conditions)
    if cond.is_true(conds, c.CONDITION_COMPLETE) or cond.is_true(conds, c.CONDITION_FAILED):
        return None
    if suspended:
        if queue:
            return Phase(
                CONDITION_QUEUED,
                REASON_QUEUED_BY_KUEUE,
                f"waiting for Kueue to admit it (queue {queue})",
            )
        return Phase(CONDITION_QUEUED, REASON_SUSPENDED, "suspended (spec.suspend is true)")
    if jobset is None:
        return None
    counts = {str(j.get("name", "")): j for j in jobs or ()}

    def n(name: str, field: str) -> int:
        try:
            return int((counts.get(name) or {}).get(field) or 0)
        except (TypeError, ValueError):
            return 0

    rjs = _replicated_jobs(jobset)
    inits = [(name, want) for name, want, init in rjs if init and n(name, "succeeded") < want]
    trainers = [(name, want) for name, want, init in rjs if not init]
    attempt = f" (restart attempt {restarts})" if restarts else ""
    running = [name for name, _ in inits if n(name, "ready") > 0]
    if running:
        return Phase(
            CONDITION_INITIALIZING,
            REASON_INITIALIZER_RUNNING,
            f"{', '.join(running)} running{attempt}",
        )
    if (
        trainers
        and all(n(name, "ready") + n(name, "succeeded") >= want for name, want in trainers)
        and any(n(name, "ready") > 0 for name, _ in trainers)
    ):
        pods = ", ".join(f"{name} {want}/{want}" for name, want in trainers)
        return Phase(
            CONDITION_RUNNING,
            REASON_ALL_TRAINER_PODS_RUNNING,
            f"every trainer pod is running (Jobs ready: {pods}){attempt}",
        )
    if restarts:
        return Phase(
            CONDITION_RESTARTING,
            REASON_JOBSET_RESTARTING,
            f"the JobSet restarted (attempt {restarts}); waiting for every trainer pod to run again",
        )
    if any(n(name, "active") > 0 for name, _ in inits):
        return Phase(
            CONDITION_INITIALIZING,
            REASON_INITIALIZER_PENDING,
            f"{', '.join(name for name, _ in inits)} pending",
        )
    return None


def set_phase(conditions: list[cond.Condition], ph: Phase | None, now: str | None = None) -> bool:
    """Make ``ph`` the one phase condition of ``conditions`` (None: none); True when changed.
    ``Running`` is left out of a TrainJob that has no other condition (the module's why)."""
    keep = ph.type if ph is not None else None
    if keep == CONDITION_RUNNING and not any(
        k.get("type") not in PHASE_CONDITIONS for k in conditions
    ):
        keep = None
    changed = False
    for t in PHASE_CONDITIONS:
        if t != keep:
            changed = cond.remove(conditions, t) or changed
    if ph is not None and keep is not None:
        changed = (
            cond.set_condition(conditions, keep, cond.TRUE, ph.reason, ph.message, now=now)
            or changed
        )
    return changed


def current(conditions: Iterable[Obj] | None) -> Phase | None:
    """The phase condition ``conditions`` carry (True), or None."""
    for k in conditions or ():
        if k.get("type") in PHASE_CONDITIONS and k.get("status") == cond.TRUE:
            return Phase(str(k["type"]), str(k.get("reason") or ""), str(k.get("message") or ""))
    return None
