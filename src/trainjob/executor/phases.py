"""What a live job is doing, finer than its phase: Queued, Initializing, Running, Restarting.

The TrainJob carries the same as a condition (:mod:`trainjob.api.phases`: the controller and the
local supervisor set it from the JobSet's counts), except ``Running`` on a TrainJob that was never
suspended, which upstream's SDK must see without any condition. This reads the job model's pods,
the same on both backends, so ``describe``, ``get jobs`` and the dashboard say what a job is doing
in every case, with a reason.
"""

from __future__ import annotations

from trainjob.api import phases as conditions
from trainjob.executor import model as st
from trainjob.executor.steps import DATASET_INITIALIZER, MODEL_INITIALIZER, step_name

QUEUED = conditions.CONDITION_QUEUED
INITIALIZING = conditions.CONDITION_INITIALIZING
RUNNING = conditions.CONDITION_RUNNING
RESTARTING = conditions.CONDITION_RESTARTING
STARTING = "Starting"

KUEUE_QUEUE_LABEL = conditions.KUEUE_QUEUE_LABEL
_INITIALIZERS = (DATASET_INITIALIZER, MODEL_INITIALIZER)


def activity(state: st.JobState) -> tuple[str, str]:
    """(activity, reason) of ``state``: for a finished job its phase and reason; for a live one
    Queued (suspended: ``QueuedByKueue`` when a Kueue queue holds it, else ``Suspended``; on the
    local backend ``WaitingForResources`` while this machine's CPUs or memory are taken),
    Initializing (an initializer runs), Restarting (after a JobSet restart, until every trainer
    pod runs again), Running (every trainer pod runs), else Starting (pods pending)."""
    if state.finished:
        return state.phase, state.reason
    labels = (state.trainjob.get("metadata") or {}).get("labels") or {}
    if state.phase == st.SUSPENDED or (state.trainjob.get("spec") or {}).get("suspend"):
        if labels.get(KUEUE_QUEUE_LABEL):
            return QUEUED, f"QueuedByKueue: waiting in queue {labels[KUEUE_QUEUE_LABEL]}"
        return QUEUED, "Suspended"
    held = conditions.current((state.trainjob.get("status") or {}).get("conditions"))
    if held is not None and held.type == QUEUED:  # the local backend: this machine is busy
        return QUEUED, f"{held.reason}: {held.message}"
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
