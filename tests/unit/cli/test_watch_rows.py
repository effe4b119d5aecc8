"""``get jobs -w``'s rows (cli/listing._watch_rows): a job's row again when what it shows changes,
not when only a phase condition no column shows changed (the local supervisor's Running condition
came a poll after the phase under load, and the same row printed twice)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from trainjob.cli import listing
from trainjob.cli.output import Columns
from trainjob.executor.model import JobState

CREATED = "2026-12-01T10:00:00Z"


def state(phase: str, conditions: list[dict[str, str]] | None = None) -> JobState:
    tj = {"spec": {"runtimeRef": {"name": "torch"}}, "status": {"conditions": conditions or []}}
    return JobState(name="a", namespace="default", phase=phase, created=CREATED, trainjob=tj)


class Watching:
    def __init__(self, *updates: list[JobState]) -> None:
        self.updates = updates

    def watch_states(self, namespace: str | None = None) -> Iterator[list[JobState]]:
        yield from self.updates


def test_a_row_that_reads_the_same_is_not_printed_again(capsys: pytest.CaptureFixture[str]) -> None:
    running = {"type": "Running", "status": "True", "reason": "AllTrainerPodsRunning"}
    table = Columns(*listing.job_headers(False, False))
    first = state("Created")
    table.add_row(*listing.job_row(first, False, False))
    ex = Watching(
        [first],
        [state("Running")],
        [state("Running", [running])],  # a condition no column shows: no new row
        [state("Complete")],
    )
    listing._watch_rows(ex, "default", set(), False, table)  # type: ignore[arg-type]
    statuses = [line.split()[1] for line in capsys.readouterr().out.splitlines()]
    assert statuses == ["Running", "Complete"]
