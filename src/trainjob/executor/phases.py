"""What a live job is doing, finer than its phase: Queued, Initializing, Running, Restarting.

Upstream's TrainJob conditions (Suspended, Complete, Failed) say nothing between "created" and
"finished", and right after a Kueue resume upstream still shows Suspended or Created while the
pods run. The job model's pods say more; this reads them, the same on both backends, so
``describe`` (and any front end) can say what a job is doing now, with a reason. The TrainJob's
own conditions stay upstream's, exactly (``tests/integration/test_upstream_diff.py``).
"""

from __future__ import annotations

from trainjob.executor import model as st
from trainjob.executor.steps import DATASET_INITIALIZER, MODEL_INITIALIZER, step_name

QUEUED = "Queued"
INITIALIZING = "Initializing"
RUNNING = "Running"
RESTARTING = "Restarting"
STARTING = "Starting"

KUEUE_QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
_INITIALIZERS = (DATASET_INITIALIZER, MODEL_INITIALIZER)


def activity(state: st.JobState) -> tuple[str, str]:
    """(activity, reason) of ``state``: for a finished job its phase and reason; for a live one
    Queued (suspended: ``QueuedByKueue`` when a Kueue queue holds it, else ``Suspended``),
    Initializing (an initializer runs), Restarting (after a JobSet restart, until every trainer
    pod runs again), Running (every trainer pod runs), else Starting (pods pending)."""
    if state.finished:
        return state.phase, state.reason
    labels = (state.trainjob.get("metadata") or {}).get("labels") or {}
    if state.phase == st.SUSPENDED or (state.trainjob.get("spec") or {}).get("suspend"):
        if labels.get(KUEUE_QUEUE_LABEL):
            return QUEUED, f"QueuedByKueue: waiting in queue {labels[KUEUE_QUEUE_LABEL]}"
        return QUEUED, "Suspended"
    pods = [p for p in state.pods if p.runs]
    inits = [p for p in pods if p.job in _INITIALIZERS]
    busy = [p for p in inits if p.phase in (st.POD_PENDING, st.POD_RUNNING)]
    if busy and any(p.phase == st.POD_RUNNING for p in busy):
        names = ", ".join(step_name(*p.step) for p in busy if p.phase == st.POD_RUNNING)
        return INITIALIZING, f"InitializerRunning: {names}"
    trainers = [p for p in pods if p.job not in _INITIALIZERS]
    up = all(p.phase in (st.POD_RUNNING, st.POD_SUCCEEDED) for p in trainers)
    if trainers and up and any(p.phase == st.POD_RUNNING for p in trainers):
        return RUNNING, f"AllTrainerPodsRunning: {len(trainers)} pod(s)"
    if state.restarts:
        return RESTARTING, f"JobSetRestart: attempt {state.restarts}"
    if busy:
        return INITIALIZING, "InitializerPending"
    return STARTING, "PodsPending"
