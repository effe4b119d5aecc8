"""Show a TrainJob's progress while ``wait_for_job_status`` waits: steps, status, elapsed time,
and what its training reported (percentage, ETA, loss: ``TrainJob.trainer_status``).

Three displays, picked from where the code runs:

- a Jupyter kernel: one output line updated in place (``IPython.display`` with a display id; the
  kernel has IPython, nothing else is needed);
- a terminal: a ``rich`` live table on stderr;
- anything else (logs, CI): one line on stderr each time the status or a step changes.

``ProgressDisplay`` is a callback (``callable(TrainJob)``) and a context manager; the backends'
wait loop calls it. Called by :mod:`trainjob.client.client`.
"""

from __future__ import annotations

import contextlib
import sys
from datetime import UTC, datetime
from typing import Any, TextIO

from trainjob.client import types
from trainjob.client.constants import UNKNOWN


def in_notebook() -> bool:
    """Whether this runs inside a Jupyter (IPython) kernel."""
    if "ipykernel" not in sys.modules:
        return False
    try:
        from IPython import get_ipython  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        return False
    shell = get_ipython()
    return shell is not None and getattr(shell, "kernel", None) is not None


def elapsed(job: types.TrainJob, now: datetime | None = None) -> float:
    """Seconds since the job was created (0 when the creation time is unknown)."""
    created = job.creation_timestamp
    if not isinstance(created, datetime):
        return 0.0
    now = now or datetime.now(UTC)
    if created.tzinfo is None:
        created = created.replace(tzinfo=UTC)
    return max(0.0, (now - created).total_seconds())


def format_elapsed(seconds: float) -> str:
    s = int(seconds)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{(s % 3600) // 60:02d}m"


def device(step: types.Step) -> str:
    """``gpu x2``, ``cpu`` (count unknown) or ``-`` (device unknown)."""
    if step.device == UNKNOWN:
        return "-"
    return step.device if step.device_count == UNKNOWN else f"{step.device} x{step.device_count}"


def reported(job: types.TrainJob, now: datetime | None = None) -> str:
    """``42%, ETA 1m30s, loss 0.6931``: what the training last reported ('' before any report);
    the ETA counted down since the report, left out once the job finished."""
    ts = job.trainer_status
    if ts is None:
        return ""
    parts = []
    if ts.progress_percentage is not None:
        parts.append(f"{ts.progress_percentage}%")
    if ts.estimated_remaining_seconds is not None and job.status not in ("Complete", "Failed"):
        eta = float(ts.estimated_remaining_seconds)
        if ts.last_updated_time is not None:
            at = ts.last_updated_time
            at = at if at.tzinfo else at.replace(tzinfo=UTC)
            eta -= max(0.0, ((now or datetime.now(UTC)) - at).total_seconds())
        parts.append(f"ETA {format_elapsed(max(0.0, eta))}")
    for name in ("loss", "train_loss"):
        if name in ts.metrics:
            value = ts.metrics[name]
            with contextlib.suppress(ValueError):
                value = f"{float(value):.4g}"
            parts.append(f"loss {value}")
            break
    return ", ".join(parts)


def summary(job: types.TrainJob, now: datetime | None = None) -> str:
    """``NAME: Running, 1m05s, 42%, ETA 1m30s, loss 0.6931, node-0 Running, node-1 Pending``:
    the one-line view."""
    steps = ", ".join(f"{s.name} {s.status or 'Pending'}" for s in job.steps)
    line = f"TrainJob {job.name}: {job.status}, {format_elapsed(elapsed(job, now))}"
    progress = reported(job, now)
    if progress:
        line += f", {progress}"
    return f"{line}, {steps}" if steps else line


class ProgressDisplay:
    """A ``wait_for_job_status`` callback that shows progress; use it as a context manager."""

    def __init__(self, stream: TextIO | None = None, mode: str | None = None) -> None:
        self.stream = stream or sys.stderr
        self.mode = mode or self._pick_mode()
        self._last = ""
        self._handle: Any = None
        self._live: Any = None

    def _pick_mode(self) -> str:
        if in_notebook():
            return "notebook"
        isatty = getattr(self.stream, "isatty", None)
        if isatty is not None and isatty():
            return "terminal"
        return "lines"

    def __enter__(self) -> ProgressDisplay:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __call__(self, job: types.TrainJob) -> None:
        if self.mode == "notebook":
            self._notebook(job)
        elif self.mode == "terminal":
            self._terminal(job)
        else:
            self._line(job)

    def _line(self, job: types.TrainJob) -> None:
        key = job.status + "|" + ",".join(f"{s.name}={s.status}" for s in job.steps)
        ts = job.trainer_status
        if ts is not None:  # a new report is a change too (not the ETA's countdown)
            key += f"|{ts.progress_percentage}|{ts.last_updated_time}"
        if key != self._last:
            self._last = key
            self.stream.write(summary(job) + "\n")
            self.stream.flush()

    def _notebook(self, job: types.TrainJob) -> None:
        from IPython import display as ipd  # type: ignore[import-not-found,unused-ignore]

        display: Any = ipd.display  # untyped in IPython
        data = {"text/plain": summary(job)}  # raw: shown as is, not as a quoted str repr
        if self._handle is None:
            self._handle = display(data, raw=True, display_id=True)
        else:
            self._handle.update(data, raw=True)

    def _table(self, job: types.TrainJob) -> Any:
        from rich.table import Table

        progress = reported(job)
        table = Table(
            title=f"TrainJob {job.name}: {job.status} ({format_elapsed(elapsed(job))})"
            + (f" {progress}" if progress else ""),
            title_justify="left",
        )
        table.add_column("STEP")
        table.add_column("STATUS")
        table.add_column("DEVICE")
        for step in job.steps:
            table.add_row(step.name, step.status or "Pending", device(step))
        return table

    def _terminal(self, job: types.TrainJob) -> None:
        if self._live is None:
            from rich.console import Console
            from rich.live import Live

            self._live = Live(
                self._table(job),
                console=Console(file=self.stream),
                refresh_per_second=4,
                transient=False,
            )
            self._live.start()
        else:
            self._live.update(self._table(job))

    def close(self) -> None:
        if self._live is not None:
            self._live.stop()
            self._live = None
