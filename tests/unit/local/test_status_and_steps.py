"""Conditions as the TrainJob controller sets them, and the CLI's step names."""

from __future__ import annotations

import pytest

from trainjob.cli import output
from trainjob.core import jobset as js
from trainjob.core import times
from trainjob.executor import steps
from trainjob.executor.model import JobState, PodState
from trainjob.local.state import status


def test_suspend_then_resume_flips_one_condition_and_its_transition_time() -> None:
    st: dict[str, object] = {}
    assert not status.resumed(st, "t0"), "Resumed only follows a suspension"
    assert status.suspended(st, "t1")
    assert not status.suspended(st, "t2"), "setting the same condition again changes nothing"
    assert status.resumed(st, "t3")
    assert st["conditions"] == [
        {
            "type": "Suspended",
            "status": "False",
            "reason": "Resumed",
            "message": "TrainJob is resumed",
            "lastTransitionTime": "t3",
        }
    ]


def test_a_changed_reason_keeps_the_transition_time() -> None:
    st: dict[str, object] = {}
    status.failed(st, "A", "a", "t1")
    assert status.failed(st, "B", "b", "t2")
    cond = status.condition(st, "Failed")
    assert cond is not None and (cond["reason"], cond["lastTransitionTime"]) == ("B", "t1")


def test_jobset_messages_name_the_first_failed_job() -> None:
    assert js.with_first_failed_job(js.MESSAGE_FAILED_JOBS, "j-node-0") == (
        "jobset failed due to one or more job failures (first failed job: j-node-0)"
    )


@pytest.mark.parametrize(
    ("job", "index", "job_index", "want"),
    [
        pytest.param("node", 1, 0, "node-1", id="a trainer node"),
        pytest.param("dataset-initializer", 0, 0, "dataset-initializer", id="an initializer"),
        pytest.param("launcher", 0, 0, "launcher-0", id="the MPI launcher"),
        pytest.param("worker", 2, 1, "worker-1-2", id="a replicated job"),
    ],
)
def test_step_names_follow_the_sdk(job: str, index: int, job_index: int, want: str) -> None:
    assert steps.step_name(job, index, job_index) == want
    assert steps.parse_step(want, [(job, index, job_index)]) == (job, index, job_index)


def test_the_default_step_is_the_first_pod_that_runs_here() -> None:
    skipped = "not run locally: mpirun starts every rank on this host, no sshd is needed"
    mpi = JobState(
        "m", "default", "Running", "t",
        pods=(PodState("launcher", 0, "l"), PodState("node", 0, "n", message=skipped)),
    )  # fmt: skip
    assert steps.default_step(mpi) == ("launcher", 0, 0)
    torch = JobState(
        "t", "default", "Running", "t", pods=(PodState("node", 0, "a"), PodState("node", 1, "b"))
    )
    assert steps.default_step(torch) == ("node", 0, 0)


@pytest.mark.parametrize(
    ("secs", "want"),
    [
        (5, "5s"),
        (119, "119s"),
        (185, "3m5s"),
        (900, "15m"),
        (3 * 3600 + 120, "3h2m"),
        (2 * 86400 + 7200, "2d2h"),
    ],
)
def test_ages_read_like_kubectl(secs: int, want: str) -> None:
    start = times.parse("2026-01-01T00:00:00Z")
    assert start is not None
    assert output.age("2026-01-01T00:00:00Z", until=start + secs) == want
