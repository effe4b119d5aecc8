"""The one status rule and the one wait loop every backend uses."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from trainjob.client import status, types

NOW = datetime(2025, 1, 1, tzinfo=UTC)


def steps(*phases: str) -> list[types.Step]:
    return [types.Step(name=f"node-{i}", status=p, pod_name=f"p{i}") for i, p in enumerate(phases)]


@pytest.mark.parametrize(
    ("conditions", "phases", "num_nodes", "want"),
    [
        pytest.param([], (), 1, "Created", id="a job without pods is Created"),
        pytest.param(
            [], ("Running", "Pending"), 2, "Created", id="one node pending keeps it Created"
        ),
        pytest.param(
            [], ("Running", "Succeeded"), 2, "Running", id="all nodes running or done is Running"
        ),
        pytest.param(
            [{"type": "Complete", "status": "True"}],
            ("Succeeded",),
            1,
            "Complete",
            id="a true Complete condition is Complete",
        ),
        pytest.param(
            [{"type": "Failed", "status": "True"}],
            ("Running",),
            1,
            "Failed",
            id="a true Failed condition is Failed",
        ),
        pytest.param(
            [{"type": "Complete", "status": "False"}],
            ("Running",),
            1,
            "Running",
            id="a false condition is ignored",
        ),
        pytest.param(
            [{"type": "Suspended", "status": "True"}],
            ("Running",),
            1,
            "Created",
            id="a suspended job is Created",
        ),
        pytest.param(
            [{"type": "Suspended", "status": "False", "reason": "Resumed"}],
            ("Running",),
            1,
            "Running",
            id="a resumed job runs again",
        ),
    ],
)
def test_job_status(conditions: Any, phases: Any, num_nodes: int, want: str) -> None:
    assert status.job_status(conditions, steps(*phases), num_nodes) == want


class FakeClock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t

    def sleep(self, s: float) -> None:
        self.t += s


def job_sequence(*statuses: str) -> tuple[Callable[[str], types.TrainJob], list[str]]:
    seen: list[str] = []

    def get_job(name: str) -> types.TrainJob:
        st = statuses[min(len(seen), len(statuses) - 1)]
        seen.append(st)
        rt = types.Runtime(
            "r", types.RuntimeTrainer(types.TrainerType.CUSTOM_TRAINER, "torch", "i")
        )
        return types.TrainJob(name, rt, [], 1, NOW, st)

    return get_job, seen


def test_wait_returns_when_the_status_is_reached_and_calls_callbacks_each_poll() -> None:
    get_job, _seen = job_sequence("Created", "Running", "Complete")
    clock = FakeClock()
    calls: list[str] = []
    job = status.wait_for_job_status(
        get_job,
        "j",
        {"Complete"},
        600,
        2,
        [lambda j: calls.append(j.status)],
        sleep=clock.sleep,
        clock=clock,
    )
    assert job.status == "Complete"
    assert calls == ["Created", "Running", "Complete"]
    assert clock.t == 4


def test_wait_raises_at_once_when_the_job_failed() -> None:
    get_job, seen = job_sequence("Running", "Failed", "Complete")
    clock = FakeClock()
    with pytest.raises(RuntimeError, match="TrainJob j is Failed"):
        status.wait_for_job_status(
            get_job, "j", {"Complete"}, 600, 2, sleep=clock.sleep, clock=clock
        )
    assert seen == ["Running", "Failed"]


def event(kind: str, name: str, reason: str, message: str) -> types.Event:
    return types.Event(kind, name, message, reason, NOW)


FAILED_EVENTS = [
    event("Job", "j-node-0", "SuccessfulCreate", "Created pod: j-node-0-0-abcde"),
    event(
        "Pod",
        "j-node-0-0-abcde",
        "Failed",
        'container "node" failed: exit code 1; its log says: ValueError: my bug: shape mismatch',
    ),
    event("Job", "j-node-0", "BackoffLimitExceeded", "Job has reached the specified backoff limit"),
    event("Pod", "j-node-0-1-fghij", "Failed", 'container "node" failed: exit code 1'),
    event("TrainJob", "j", "FailedJobs", "jobset failed due to one or more job failures"),
]


def test_the_failed_error_says_why_from_the_events() -> None:
    get_job, _ = job_sequence("Failed")
    with pytest.raises(RuntimeError) as info:
        status.wait_for_job_status(
            get_job,
            "j",
            {"Complete"},
            10,
            1,
            reason=lambda name: status.failure_from_events(FAILED_EVENTS),
        )
    assert str(info.value) == (
        "TrainJob j is Failed: jobset failed due to one or more job failures; "
        'j-node-0-0-abcde: container "node" failed: exit code 1; its log says: '
        "ValueError: my bug: shape mismatch"
    )


def test_unreadable_events_still_raise_the_failed_error() -> None:
    get_job, _ = job_sequence("Failed")

    def broken(name: str) -> str:
        raise RuntimeError("events: 403 Forbidden")

    with pytest.raises(RuntimeError, match=r"^TrainJob j is Failed$"):
        status.wait_for_job_status(get_job, "j", {"Complete"}, 10, 1, reason=broken)


def test_failure_without_events_is_empty() -> None:
    assert status.failure_from_events([]) == ""


def test_wait_returns_a_failed_job_when_failed_is_wanted() -> None:
    get_job, _ = job_sequence("Failed")
    assert (
        status.wait_for_job_status(get_job, "j", {"Complete", "Failed"}, 10, 1).status == "Failed"
    )


def test_wait_times_out() -> None:
    get_job, seen = job_sequence("Running")
    clock = FakeClock()
    with pytest.raises(TimeoutError, match="Timeout waiting for TrainJob j"):
        status.wait_for_job_status(get_job, "j", {"Complete"}, 5, 2, sleep=clock.sleep, clock=clock)
    assert clock.t == 5
    assert len(seen) == 4


@pytest.mark.parametrize(
    ("wanted", "timeout", "interval", "fragment"),
    [
        pytest.param(
            {"Succeeded"}, 10, 1, "must be a subset of", id="an unknown status is refused"
        ),
        pytest.param(
            {"Complete"},
            1,
            2,
            "must be strictly less than timeout",
            id="an interval above the timeout",
        ),
        pytest.param(
            {"Complete"},
            10,
            10,
            "Polling interval must be strictly less than timeout. "
            "Received polling_interval=10, timeout=10",
            id="an interval equal to the timeout is refused as upstream",
        ),
        pytest.param({"Complete"}, 10, 0, "must be a positive number", id="a zero interval"),
        pytest.param(set(), 10, 1, "non-empty", id="an empty set"),
    ],
)
def test_wait_arguments_are_checked(
    wanted: Any, timeout: Any, interval: Any, fragment: str
) -> None:
    get_job, seen = job_sequence("Running")
    with pytest.raises(ValueError, match=fragment):
        status.wait_for_job_status(get_job, "j", wanted, timeout, interval)
    assert seen == []
