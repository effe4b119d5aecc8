"""What ``wait_for_job_status(show_progress=True)`` shows, in each of its three displays."""

from __future__ import annotations

import io
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from trainjob.client import progress, types

CREATED = datetime(2025, 1, 1, tzinfo=UTC)


def job(status: str, *phases: str) -> types.TrainJob:
    rt = types.Runtime("r", types.RuntimeTrainer(types.TrainerType.CUSTOM_TRAINER, "torch", "i"))
    steps = [types.Step(f"node-{i}", p, f"pod-{i}", "cpu", "1") for i, p in enumerate(phases)]
    return types.TrainJob("j", rt, steps, len(phases), CREATED, status)


def test_summary_line_has_status_elapsed_and_steps() -> None:
    line = progress.summary(
        job("Running", "Running", "Pending"), now=CREATED + timedelta(seconds=65)
    )
    assert line == "TrainJob j: Running, 1m05s, node-0 Running, node-1 Pending"


def test_lines_mode_writes_one_line_per_change() -> None:
    out = io.StringIO()
    display = progress.ProgressDisplay(stream=out)
    assert display.mode == "lines"
    for j in (
        job("Created", "Pending"),
        job("Created", "Pending"),
        job("Running", "Running"),
        job("Complete", "Succeeded"),
    ):
        display(j)
    lines = out.getvalue().splitlines()
    assert [ln.split(",")[0] for ln in lines] == [
        "TrainJob j: Created",
        "TrainJob j: Running",
        "TrainJob j: Complete",
    ]


def test_terminal_mode_draws_a_table_of_steps() -> None:
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    out = Tty()
    with progress.ProgressDisplay(stream=out) as display:
        assert display.mode == "terminal"
        display(job("Running", "Running", "Succeeded"))
    text = out.getvalue()
    assert "TrainJob j: Running" in text
    assert "node-1" in text and "Succeeded" in text


@pytest.mark.parametrize(
    ("dev", "count", "shown"),
    [
        pytest.param("gpu", "2", "gpu x2", id="device and count"),
        pytest.param("cpu", "Unknown", "cpu", id="device without a known count"),
        pytest.param(
            "Unknown", "Unknown", "-", id="unknown device is a dash, not Unknown xUnknown"
        ),
    ],
)
def test_device_column(dev: Any, count: Any, shown: str) -> None:
    assert progress.device(types.Step("node-0", "Running", "p", dev, count)) == shown


def test_notebook_mode_is_not_picked_outside_a_kernel() -> None:
    assert progress.in_notebook() is False
