"""The bound on a job's teardown (how long removing what it started may take before its end is
written, with a CleanupFailed event): 60 s, or the seconds ``TRAINJOB_SUPERVISOR_TEARDOWN_TIMEOUT``
gives the supervisor (tests of the bound set it, not to wait a minute); a value that is not a
number of seconds > 0 keeps the default and says so."""

from __future__ import annotations

import pytest

from trainjob.local.job.supervisor import ENV_TEARDOWN_TIMEOUT, TEARDOWN_TIMEOUT, teardown_timeout


def test_unset_or_empty_is_the_default_minute() -> None:
    assert TEARDOWN_TIMEOUT == 60.0
    assert teardown_timeout({}) == (60.0, "")
    assert teardown_timeout({ENV_TEARDOWN_TIMEOUT: " "}) == (60.0, "")


@pytest.mark.parametrize(("raw", "bound"), [("8", 8.0), ("2.5", 2.5), (" 120 ", 120.0)])
def test_a_number_of_seconds_is_the_bound(raw: str, bound: float) -> None:
    assert teardown_timeout({ENV_TEARDOWN_TIMEOUT: raw}) == (bound, "")


@pytest.mark.parametrize("raw", ["0", "-3", "soon", "inf", "nan", "1e999"])
def test_anything_else_keeps_the_default_and_names_the_setting(raw: str) -> None:
    bound, problem = teardown_timeout({ENV_TEARDOWN_TIMEOUT: raw})
    assert bound == 60.0
    assert problem == (
        f"TRAINJOB_SUPERVISOR_TEARDOWN_TIMEOUT={raw!r} is not a number of seconds greater than "
        "0; the clean-up was bounded by 60s instead"
    )


def test_the_setting_is_the_supervisors_own_and_no_pod_sees_it() -> None:
    """Pods get the supervisor's environment less every TRAINJOB_SUP* name (attempt.py)."""
    assert ENV_TEARDOWN_TIMEOUT.startswith("TRAINJOB_SUP")
