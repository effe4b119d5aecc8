"""What a live job is doing: Queued, Initializing, Running, Restarting, from its pods."""

from __future__ import annotations

from typing import Any

from trainjob.executor import model as st
from trainjob.executor import phases


def _state(
    *pods: st.PodState, phase: str = st.RUNNING, restarts: int = 0, **tj: Any
) -> st.JobState:
    return st.JobState("j", "ns", phase, "t", restarts=restarts, pods=pods, trainjob=tj)


def _pod(job: str, index: int, phase: str) -> st.PodState:
    return st.PodState(job, index, f"j-{job}-0-{index}", phase)


def test_queued_by_kueue_or_suspended() -> None:
    kueue: dict[str, Any] = {
        "metadata": {"labels": {"kueue.x-k8s.io/queue-name": "gpus"}},
        "spec": {"suspend": True},
    }
    assert phases.activity(_state(phase=st.SUSPENDED, **kueue)) == (
        "Queued",
        "QueuedByKueue: waiting in queue gpus",
    )
    assert phases.activity(_state(phase=st.SUSPENDED)) == ("Queued", "Suspended")


def test_queued_for_this_machines_capacity_and_get_jobs_says_so() -> None:
    from trainjob.cli import listing

    held = {"type": "Queued", "status": "True", "reason": "WaitingForResources", "message": "busy"}
    waiting = _state(
        _pod("node", 0, st.POD_PENDING), phase=st.CREATED, status={"conditions": [held]}
    )
    assert phases.activity(waiting) == ("Queued", "WaitingForResources: busy")
    assert listing.status_cell(waiting) == ("Queued", "WaitingForResources")
    suspended = {**held, "reason": "Suspended"}
    paused = _state(phase=st.SUSPENDED, status={"conditions": [suspended]})
    assert listing.status_cell(paused) == ("Suspended", "Suspended")


def test_initializing_then_running_then_restarting() -> None:
    init = _pod("model-initializer", 0, st.POD_RUNNING)
    node = _pod("node", 0, st.POD_PENDING)
    assert phases.activity(_state(init, node, phase=st.CREATED)) == (
        "Initializing",
        "InitializerRunning: model-initializer",
    )
    done = _pod("model-initializer", 0, st.POD_SUCCEEDED)
    running = [_pod("node", i, st.POD_RUNNING) for i in (0, 1)]
    assert phases.activity(_state(done, *running))[0] == "Running"
    half = [_pod("node", 0, st.POD_RUNNING), _pod("node", 1, st.POD_PENDING)]
    assert phases.activity(_state(done, *half)) == ("Starting", "PodsPending")
    assert phases.activity(_state(done, *half, restarts=2)) == (
        "Restarting",
        "JobSetRestart: attempt 2",
    )
    assert phases.activity(_state(done, *running, restarts=2))[0] == "Running", "after a restart"


def test_a_finished_job_is_its_phase_and_reason() -> None:
    s = st.JobState("j", "ns", st.FAILED, "t", reason="FailedJobs")
    assert phases.activity(s) == ("Failed", "FailedJobs")


def test_watch_reports_a_job_again_on_a_progress_report_or_a_phase_condition() -> None:
    from trainjob.executor.base import _watched

    def report(at: str, pct: int) -> dict[str, Any]:
        return {"trainerStatus": {"lastUpdatedTime": at, "progressPercentage": pct}}

    a = _state(status=report("2026-01-01T00:00:00Z", 10))
    b = _state(status=report("2026-01-01T00:00:05Z", 40))
    assert _watched(a) != _watched(b), "a new report"
    assert _watched(a) == _watched(_state(status=report("2026-01-01T00:00:00Z", 10)))
    # lastUpdatedTime is to the second: the start report and the first loss share one often
    same_second = _state(status=report("2026-01-01T00:00:00Z", 1))
    assert _watched(a) != _watched(same_second), "another report in the same second"
    restarting = {"conditions": [{"type": "Restarting", "status": "True", "reason": "R"}]}
    assert _watched(_state(status=restarting)) != _watched(_state(status={}))
