"""apimachinery's SetStatusCondition semantics, the one implementation every layer uses."""

from __future__ import annotations

from trainjob.core import conditions as cond

T0, T1 = "2026-01-01T00:00:00Z", "2026-01-01T00:05:00Z"


def test_a_new_condition_is_appended_with_its_transition_time() -> None:
    conds: list[cond.Condition] = []
    assert cond.set_condition(conds, "Suspended", True, "Suspended", "m", now=T0)
    assert conds == [
        {
            "type": "Suspended",
            "status": "True",
            "reason": "Suspended",
            "message": "m",
            "lastTransitionTime": T0,
        }
    ]


def test_the_same_condition_again_changes_nothing() -> None:
    conds: list[cond.Condition] = []
    cond.set_condition(conds, "Complete", "True", "R", "m", now=T0)
    assert not cond.set_condition(conds, "Complete", "True", "R", "m", now=T1)
    assert conds[0]["lastTransitionTime"] == T0


def test_reason_and_message_change_in_place_keeping_the_transition_time() -> None:
    conds: list[cond.Condition] = []
    cond.set_condition(conds, "Failed", True, "R", "m", now=T0)
    assert cond.set_condition(conds, "Failed", True, "R2", "m2", now=T1)
    assert (conds[0]["reason"], conds[0]["message"], conds[0]["lastTransitionTime"]) == (
        "R2",
        "m2",
        T0,
    )


def test_a_flip_moves_the_transition_time_or_copies_the_given_one() -> None:
    conds: list[cond.Condition] = []
    cond.set_condition(conds, "Suspended", True, "Suspended", "m", now=T0)
    assert cond.set_condition(conds, "Suspended", False, "Resumed", "m", now=T1)
    assert conds[0]["status"] == "False" and conds[0]["lastTransitionTime"] == T1
    assert cond.set_condition(
        conds, "Suspended", True, "Suspended", "m", now=T1, last_transition_time=T0
    )
    assert conds[0]["lastTransitionTime"] == T0


def test_find_is_true_and_remove() -> None:
    conds: list[cond.Condition] = []
    cond.set_condition(conds, "A", True, "r", "m", now=T0)
    cond.set_condition(conds, "B", False, "r", "m", now=T0)
    assert cond.is_true(conds, "A") and not cond.is_true(conds, "B")
    assert not cond.is_true(conds, "C") and cond.find(conds, "C") is None
    assert not cond.is_true(None, "A")
    assert cond.remove(conds, "A") and not cond.remove(conds, "A")
    assert [k["type"] for k in conds] == ["B"]
