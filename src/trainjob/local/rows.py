"""The rows of the local job store (:mod:`trainjob.local.store`): one frozen dataclass per
table, whose fields are the table's columns in order (the column lists below are made from
them, so a column is declared once)."""

from __future__ import annotations

import json
from dataclasses import dataclass, fields, replace
from typing import Any


@dataclass(frozen=True)
class JobRow:
    namespace: str
    name: str
    uid: str
    created: str
    created_ts: float
    trainjob: str
    runtime: str
    plan: str
    cwd: str
    phase: str
    reason: str = ""
    message: str = ""
    status: str = "{}"
    started: str | None = None
    completed: str | None = None
    restarts: int = 0
    suspend: int = 0
    deleting: int = 0
    supervisor_pid: int | None = None
    supervisor_start: str | None = None
    runner: str = ""  # how its pods run: "" processes, else container settings (local.runner)

    def trainjob_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = json.loads(self.trainjob)
        return out

    def status_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = json.loads(self.status)
        return out


@dataclass(frozen=True)
class PodRow:
    namespace: str
    name: str
    uid: str
    job: str
    job_index: int
    idx: int
    pod_name: str
    phase: str
    exit_code: int | None = None
    started: str | None = None
    finished: str | None = None
    restarts: int = 0
    pid: int | None = None
    pid_start: str | None = None
    message: str = ""
    ready: bool = False  # Running with its containers ready (readiness probes passed)


@dataclass(frozen=True)
class EventRow:
    namespace: str
    name: str
    uid: str
    type: str
    reason: str
    message: str
    timestamp: str
    involved_kind: str
    involved_name: str


@dataclass(frozen=True)
class ReportRow:
    """One progress report of a job (``status.trainerStatus`` keeps the latest): its time, the
    percentage and ETA it gave, and its metrics (a JSON object, name -> value as reported)."""

    namespace: str
    name: str
    uid: str
    time: str
    progress: int | None
    eta: int | None
    metrics: str = "{}"


JOB_COLS = [f.name for f in fields(JobRow)]
SUMMARY_COLS = (
    "namespace", "name", "uid", "created", "phase", "reason", "message", "started",
    "completed", "restarts", "status", "trainjob",
)  # fmt: skip
POD_COLS = [f.name for f in fields(PodRow)]
EVENT_COLS = [f.name for f in fields(EventRow)]
REPORT_COLS = [f.name for f in fields(ReportRow)]


def pod_row(r: tuple[Any, ...]) -> PodRow:
    p = PodRow(*r)
    return replace(p, ready=bool(p.ready))
