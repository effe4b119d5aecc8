"""A job's phases over time (dashboard/timeline.py), from the traces each backend leaves: the
creation time, events, the pods' start times, the conditions' last transitions."""

from __future__ import annotations

from typing import Any

from trainjob.core import times
from trainjob.dashboard import timeline
from trainjob.executor.model import Event, JobState, PodState

T0 = 1_767_225_600.0  # 2026-01-01T00:00:00Z


def at(seconds: float) -> str:
    return times.format(T0 + seconds)


def ev(seconds: float, reason: str, type_: str = "Normal", message: str = "") -> Event:
    return Event(type_, reason, message, at(seconds), "TrainJob", "j")


def cond(kind: str, seconds: float, status: str = "True", reason: str = "") -> dict[str, Any]:
    return {"type": kind, "status": status, "reason": reason, "lastTransitionTime": at(seconds)}


def state(
    phase: str, *, pods: tuple[PodState, ...] = (), conditions: tuple[Any, ...] = (), **kw: Any
) -> JobState:
    tj = {"metadata": {"labels": kw.pop("labels", {})}, "status": {"conditions": list(conditions)}}
    return JobState("j", "default", phase, at(0), pods=pods, trainjob=tj, **kw)


def pod(job: str, index: int, started: float | None, phase: str = "Running") -> PodState:
    return PodState(
        job, index, f"j-{job}-0-{index}", phase, started=None if started is None else at(started)
    )


def phases(s: JobState, events: list[Event], now: float | None = None) -> list[tuple[str, float]]:
    return [(seg["phase"], seg["seconds"]) for seg in timeline.timeline(s, events, now)]


def test_a_completed_two_node_job_created_starting_running_complete() -> None:
    s = state(
        "Complete",
        pods=(pod("node", 0, 3, "Succeeded"), pod("node", 1, 4, "Succeeded")),
        conditions=(cond("Complete", 20, reason="JobsCompleted"),),
        started=at(2),
        completed=at(20),
        reason="JobsCompleted",
    )
    events = [ev(2, "SuccessfulCreate"), ev(2, "SuccessfulCreate"), ev(20, "AllJobsCompleted")]
    assert phases(s, events) == [("Created", 2), ("Starting", 2), ("Running", 16), ("Complete", 0)]
    segs = timeline.timeline(s, events)
    assert segs[2]["start"] == at(4) and segs[2]["end"] == at(20)
    assert segs[2]["reason"] == "AllTrainerPodsRunning: 2 pod(s)"
    assert segs[-1]["end"] == at(20)


def test_a_running_job_s_last_phase_lasts_until_now() -> None:
    s = state("Running", pods=(pod("node", 0, 5),), started=at(5))
    segs = timeline.timeline(s, [ev(4, "SuccessfulCreate")], now=T0 + 65)
    assert [(x["phase"], x["seconds"], x["end"]) for x in segs] == [
        ("Created", 4, at(4)),
        ("Starting", 1, at(5)),
        ("Running", 60, None),
    ]


def test_initializers_suspend_resume_and_a_restart() -> None:
    """Queued by Kueue (its label), resumed, an initializer, the trainers, a JobSet restart
    and the trainer pods again: each phase once, in order."""
    s = state(
        "Running",
        labels={"kueue.x-k8s.io/queue-name": "team"},
        pods=(
            pod("dataset-initializer", 0, 12, "Succeeded"),
            pod("node", 0, 41),
            pod("node", 1, 42),
        ),
        conditions=(cond("Suspended", 10, "False", "Resumed"),),
        restarts=1,
        started=at(11),
    )
    events = [
        ev(1, "Suspended"),
        ev(10, "Resumed"),
        ev(11, "SuccessfulCreate"),
        ev(30, "Restarting", "Warning", "restarting jobset, attempt 1"),
        ev(40, "SuccessfulCreate"),
    ]
    got = [x["phase"] for x in timeline.timeline(s, events, now=T0 + 50)]
    assert got == [
        "Created", "Queued", "Starting", "Initializing", "Restarting", "Starting", "Running",
    ]  # fmt: skip
    restart = timeline.timeline(s, events, now=T0 + 50)[4]
    assert restart["reason"] == "Restarting: restarting jobset, attempt 1"


def test_the_phase_conditions_of_the_lifecycle_issue_are_read_when_present() -> None:
    """trainjob's phase condition (Queued, Initializing, Running, Restarting) says when its
    phase began, where no event or pod says it (a cluster whose pods are not listed)."""
    s = state(
        "Running",
        conditions=(
            cond("Suspended", 5, "False", "Resumed"),
            cond("Running", 9, reason="AllTrainerPodsRunning"),
        ),
    )
    segs = timeline.timeline(s, [], now=T0 + 10)
    assert [(x["phase"], x["reason"]) for x in segs] == [
        ("Created", "TrainJob created"),
        ("Starting", "Resumed"),
        ("Running", "AllTrainerPodsRunning"),
    ]


def test_a_failed_job_ends_failed_and_nothing_comes_after() -> None:
    s = state(
        "Failed",
        pods=(pod("node", 0, 3, "Failed"),),
        conditions=(cond("Failed", 8, reason="BackoffLimitExceeded"),),
        started=at(3),
        completed=at(8),
        reason="BackoffLimitExceeded",
    )
    events = [
        ev(2, "SuccessfulCreate"),
        ev(6, "StatusServerFailed", "Warning"),  # a warning, not the failure
        ev(8, "BackoffLimitExceeded", "Warning", "the job failed"),
        ev(9, "SuccessfulCreate"),  # late: after the end
    ]
    assert phases(s, events) == [("Created", 2), ("Starting", 1), ("Running", 5), ("Failed", 0)]


def test_a_job_with_no_trace_but_its_times() -> None:
    """A job whose events are gone (a cluster keeps them an hour): its start and end times."""
    s = state("Complete", started=at(30), completed=at(90), reason="JobsCompleted")
    assert phases(s, []) == [("Created", 30), ("Running", 60), ("Complete", 0)]
