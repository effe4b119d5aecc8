"""RFC 3339 time: one reading of a timestamp whatever the machine's time zone."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from trainjob.cli import output
from trainjob.core import times


@pytest.fixture
def summer_in_new_york() -> Iterator[None]:
    """The process in a zone that is on daylight saving time on the dates below."""
    old = os.environ.get("TZ")
    os.environ["TZ"] = "America/New_York"
    time.tzset()
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("TZ", None)
        else:
            os.environ["TZ"] = old
        time.tzset()


@pytest.mark.parametrize(
    ("value", "want"),
    [
        pytest.param("2026-07-01T12:00:00Z", datetime(2026, 7, 1, 12, tzinfo=UTC), id="Z"),
        pytest.param(
            "2026-07-01T12:00:00.250000Z",
            datetime(2026, 7, 1, 12, 0, 0, 250000, tzinfo=UTC),
            id="MicroTime",
        ),
        pytest.param(
            "2026-07-01T14:00:00+02:00", datetime(2026, 7, 1, 12, tzinfo=UTC), id="offset"
        ),
        pytest.param(
            "2026-07-01T12:00:00", datetime(2026, 7, 1, 12, tzinfo=UTC), id="no zone is UTC"
        ),
    ],
)
def test_parse_reads_what_an_apiserver_writes(
    summer_in_new_york: None, value: str, want: datetime
) -> None:
    assert times.parse(value) == want.timestamp()
    assert times.parse_datetime(value) == want


@pytest.mark.parametrize("value", [None, "", "yesterday", "2026-13-01T00:00:00Z"])
def test_parse_of_nothing_or_garbage_is_none(value: str | None) -> None:
    assert times.parse(value) is None


def test_format_and_parse_round_trip_under_daylight_saving_time(summer_in_new_york: None) -> None:
    t = 1782907200.0  # 2026-07-01T12:00:00Z, when New York is UTC-4 (EDT)
    assert times.format(t) == "2026-07-01T12:00:00Z"
    assert times.parse(times.format(t)) == t
    assert times.micro(t) == "2026-07-01T12:00:00.000000Z"


def test_age_is_not_an_hour_off_under_daylight_saving_time(summer_in_new_york: None) -> None:
    """The CLI's AGE once used mktime(...) - time.timezone, an hour off in summer."""
    started = times.format(time.time() - 90)
    assert output.age(started) in ("90s", "91s")


def test_now_is_utc_to_the_second() -> None:
    value = times.now()
    assert value.endswith("Z") and len(value) == len("2026-07-01T12:00:00Z")
    assert abs((times.parse(value) or 0) - time.time()) < 2
