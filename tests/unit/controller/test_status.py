"""Conditions, status from the JobSet, suspension and the active deadline (pure functions)."""

from __future__ import annotations

from typing import Any

import pytest

from trainjob.api import conditions as tc
from trainjob.controller import status as st
from trainjob.controller.reconcile import failure_message
from trainjob.core import conditions as cond
from trainjob.core import times
from trainjob.runtime.plugins import jobset as jobset_plugin

Obj = dict[str, Any]
T0 = "2026-01-01T00:00:00Z"
T1 = "2026-01-01T00:10:00Z"


def c(type_: str, status: str, reason: str = "R", message: str = "m", t: str = T0) -> Obj:
    return {
        "type": type_,
        "status": status,
        "reason": reason,
        "message": message,
        "lastTransitionTime": t,
    }


# -- set_condition -----------------------------------------------------------------------------


def test_setting_a_new_condition_appends_it_with_the_time() -> None:
    conds: list[Obj] = []
    assert cond.set_condition(conds, "Suspended", "True", "Suspended", "m", now=T1)
    assert conds == [c("Suspended", "True", "Suspended", "m", T1)]


def test_setting_the_same_condition_changes_nothing() -> None:
    conds = [c("Suspended", "True")]
    assert not cond.set_condition(conds, "Suspended", "True", "R", "m", now=T1)
    assert conds == [c("Suspended", "True")]


def test_a_new_message_keeps_the_transition_time() -> None:
    conds = [c("Failed", "True")]
    assert cond.set_condition(conds, "Failed", "True", "R2", "other", now=T1)
    assert conds == [c("Failed", "True", "R2", "other", T0)]


def test_a_status_flip_moves_the_transition_time() -> None:
    conds = [c("Suspended", "True")]
    assert cond.set_condition(conds, "Suspended", "False", "Resumed", "m", now=T1)
    assert conds[0]["lastTransitionTime"] == T1 and conds[0]["status"] == "False"


def test_remove_drops_only_that_type() -> None:
    conds = [c("A", "True"), c("B", "True")]
    assert cond.remove(conds, "A") and not cond.remove(conds, "A")
    assert [x["type"] for x in conds] == ["B"]


@pytest.mark.parametrize(
    ("conds", "finished"),
    [
        pytest.param([], False, id="no conditions is not finished"),
        pytest.param([c("Complete", "True")], True, id="Complete True is finished"),
        pytest.param([c("Failed", "True")], True, id="Failed True is finished"),
        pytest.param([c("Failed", "False")], False, id="Failed False is not finished"),
        pytest.param([c("Suspended", "True")], False, id="Suspended is not finished"),
    ],
)
def test_is_finished(conds: list[Obj], finished: bool) -> None:
    assert tc.is_finished(conds) is finished


# -- suspension --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("before", "suspend", "after"),
    [
        pytest.param(
            [],
            True,
            [c("Suspended", "True", "Suspended", "TrainJob is suspended", T1)],
            id="a suspended TrainJob gets Suspended True",
        ),
        pytest.param(
            [c("Suspended", "True", "Suspended", "TrainJob is suspended")],
            False,
            [c("Suspended", "False", "Resumed", "TrainJob is resumed", T1)],
            id="a resumed TrainJob gets Suspended False Resumed",
        ),
        pytest.param([], False, [], id="a never suspended TrainJob gets no condition"),
        pytest.param(
            [c("Suspended", "False", "Resumed", "TrainJob is resumed")],
            False,
            [c("Suspended", "False", "Resumed", "TrainJob is resumed")],
            id="a resumed TrainJob stays resumed",
        ),
    ],
)
def test_set_suspended(before: list[Obj], suspend: bool, after: list[Obj]) -> None:
    tc.set_suspended(before, suspend, now=T1)
    assert before == after


# -- status from the JobSet -------------------------------------------------------------------


def jobset(conditions: list[Obj] | None = None, rjobs: list[Obj] | None = None) -> Obj:
    return {"status": {"conditions": conditions or [], "replicatedJobsStatus": rjobs or []}}


def test_a_completed_jobset_completes_the_trainjob_with_its_reason_and_time() -> None:
    conds: list[Obj] = []
    jobset_plugin.apply_jobset_status(
        conds, jobset([c("Completed", "True", "AllJobsCompleted", "jobset completed successfully")])
    )
    assert conds == [c("Complete", "True", "AllJobsCompleted", "jobset completed successfully")]


def test_a_failed_jobset_fails_the_trainjob() -> None:
    conds = [c("Suspended", "False", "Resumed", "TrainJob is resumed")]
    jobset_plugin.apply_jobset_status(
        conds, jobset([c("Failed", "True", "FailedJobs", "jobset failed")])
    )
    assert conds[1] == c("Failed", "True", "FailedJobs", "jobset failed")


def test_false_jobset_conditions_are_not_copied() -> None:
    conds: list[Obj] = []
    jobset_plugin.apply_jobset_status(
        conds, jobset([c("Completed", "False"), c("Failed", "False"), c("Suspended", "True")])
    )
    assert conds == []


def test_jobs_status_is_copied_from_replicated_jobs_status_with_zeros() -> None:
    got = jobset_plugin.apply_jobset_status(
        [], jobset(rjobs=[{"name": "node", "ready": 2, "active": 2}, {"name": "init"}])
    )
    assert got == [
        {"name": "node", "ready": 2, "succeeded": 0, "failed": 0, "active": 2, "suspended": 0},
        {"name": "init", "ready": 0, "succeeded": 0, "failed": 0, "active": 0, "suspended": 0},
    ]


# -- active deadline --------------------------------------------------------------------------

_now = times.parse(T1)
assert _now is not None
NOW: float = _now


def tj(seconds: int | None, suspend: bool = False, created: str = T0) -> Obj:
    spec: Obj = {"suspend": suspend}
    if seconds is not None:
        spec["activeDeadlineSeconds"] = seconds
    return {"metadata": {"creationTimestamp": created}, "spec": spec}


@pytest.mark.parametrize(
    ("obj", "conds", "want"),
    [
        pytest.param(tj(None), [], None, id="no deadline, nothing to check"),
        pytest.param(tj(900), [], 300.0, id="time left counts from creation"),
        pytest.param(tj(60), [], -540.0, id="past the deadline is negative"),
        pytest.param(tj(60, suspend=True), [], None, id="a suspended TrainJob has no clock"),
        pytest.param(tj(60), [c("Complete", "True")], None, id="a finished TrainJob has no clock"),
        pytest.param(
            tj(60),
            [c("Suspended", "False", "Resumed", "m", "2026-01-01T00:09:30Z")],
            30.0,
            id="a resume restarts the clock",
        ),
    ],
)
def test_deadline(obj: Obj, conds: list[Obj], want: float | None) -> None:
    assert st.deadline(obj, conds, NOW) == want


@pytest.mark.parametrize(
    ("status", "has_jobset", "want"),
    [
        pytest.param({}, False, "Pending", id="no JobSet yet is Pending"),
        pytest.param({}, True, "Running", id="a JobSet is Running"),
        pytest.param({"conditions": [c("Complete", "True")]}, True, "Complete", id="Complete"),
        pytest.param({"conditions": [c("Failed", "True")]}, False, "Failed", id="Failed"),
        pytest.param(
            {"conditions": [c("RuntimeNotFound", "True")]},
            False,
            "RuntimeNotFound",
            id="waiting for its runtime",
        ),
    ],
)
def test_state(status: Obj, has_jobset: bool, want: str) -> None:
    assert st.state({"spec": {}, "status": status}, has_jobset) == want


def test_failure_message_is_upstreams_and_truncated_at_950_characters() -> None:
    assert failure_message(ValueError("boom")) == ("TrainJob resources reconciliation failed: boom")
    long = failure_message(ValueError("x" * 2000))
    assert long == "TrainJob resources reconciliation failed: " + "x" * 950 + " ..."
