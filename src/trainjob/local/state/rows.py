"""The rows of the local job store (:mod:`trainjob.local.state.store`): one named tuple per table,
whose fields are the table's columns in order (the column lists below are made from them, so a
column is declared once), and the listing's columns of a job (:func:`derived`).

Named tuples, not dataclasses: a row is a row of SQLite's (``JobRow(*r)``), changed with
``_replace``, and every ``trainjob get jobs`` imports this module: making four frozen dataclasses
(and importing :mod:`dataclasses`, which imports :mod:`inspect`) cost about a tenth of the
command's start-up (benchmarks/cli_startup.py).

A listing of many jobs (``trainjob get jobs``, the dashboard's Jobs page) reads only scalar
columns kept beside each job's JSON (its runtime's name, nodes, TTLs, when it finished, its
latest progress report) and parses no TrainJob: :class:`StoredObject` parses one when a caller
reads it (a label selector, ``--sort-by``).
"""

# No ``from __future__ import annotations`` here: a named tuple's string annotations are each
# compiled (typing.ForwardRef), and the first compile() of a process builds the AST types,
# about 3 ms of every ``trainjob get jobs`` (benchmarks/cli_startup.py).

import json
from collections.abc import Iterator, Mapping
from typing import Any, NamedTuple

from trainjob.core import lifetime
from trainjob.executor.model import JobSummary, MetricSample, trainer_status_sample


class JobRow(NamedTuple):
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
    runner: str = ""  # how its pods run: "" processes, else container settings (local/job/runner)

    def trainjob_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = json.loads(self.trainjob)
        return out

    def status_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = json.loads(self.status)
        return out


class PodRow(NamedTuple):
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


class EventRow(NamedTuple):
    namespace: str
    name: str
    uid: str
    type: str
    reason: str
    message: str
    timestamp: str
    involved_kind: str
    involved_name: str


class ReportRow(NamedTuple):
    """One progress report of a job (``status.trainerStatus`` keeps the latest): its time, the
    percentage and ETA it gave, and its metrics (a JSON object, name -> value as reported)."""

    namespace: str
    name: str
    uid: str
    time: str
    progress: int | None
    eta: int | None
    metrics: str = "{}"


JOB_COLS = list(JobRow._fields)
DERIVED_COLS = (
    "runtime_ref", "num_nodes", "job_ttl", "runtime_ttl", "finished_at", "reported", "progress",
    "eta", "metrics",
)  # fmt: skip
"""The jobs table's columns kept from its JSON ones on every write (:func:`derived`)."""
LISTING_COLS = (
    "namespace", "name", "uid", "created", "phase", "reason", "message", "started",
    "completed", "restarts", *DERIVED_COLS, "trainjob", "status",
)  # fmt: skip
"""What a listing reads of each job (:meth:`Store.listing`), then whether its JSON is whole."""
POD_COLS = list(PodRow._fields)
EVENT_COLS = list(EventRow._fields)
REPORT_COLS = list(ReportRow._fields)


def pod_row(r: tuple[Any, ...]) -> PodRow:
    p = PodRow(*r)
    return p._replace(ready=bool(p.ready))


def _json_object(text: object) -> dict[str, Any]:
    try:
        out = json.loads(text) if isinstance(text, str) else None
    except ValueError:
        return {}
    return out if isinstance(out, dict) else {}


def _int(value: object) -> int | None:
    try:
        return None if value is None or isinstance(value, bool) else int(value)  # type: ignore[call-overload]
    except (TypeError, ValueError):
        return None


def derived(values: Mapping[str, Any]) -> dict[str, Any]:
    """The listing's columns that follow from the JSON columns among ``values`` (``trainjob``,
    ``runtime``, ``status``): the runtime's name, ``numNodes`` and ``ttlSecondsAfterFinished``
    of the TrainJob, the runtime's ``runPolicy`` TTL, when the job finished (its Complete or
    Failed condition) and its latest progress report (``status.trainerStatus``, JSON). A
    damaged value gives empty ones: the listing checks the JSON itself. The report is kept as
    its time (``reported``, ``""`` before any; ``"-"`` for one without a time), percentage, ETA
    and metrics (a JSON object, name -> value), as :class:`~trainjob.executor.model.MetricSample`
    holds it."""
    out: dict[str, Any] = {}
    if "trainjob" in values:
        spec = _json_object(values["trainjob"]).get("spec")
        spec = spec if isinstance(spec, dict) else {}
        ref, trainer = spec.get("runtimeRef"), spec.get("trainer")
        out["runtime_ref"] = str(ref.get("name") or "") if isinstance(ref, dict) else ""
        out["num_nodes"] = _int(trainer.get("numNodes")) if isinstance(trainer, dict) else None
        out["job_ttl"] = _int(spec.get("ttlSecondsAfterFinished"))
    if "runtime" in values:
        try:
            out["runtime_ttl"] = lifetime.ttl_seconds({}, _json_object(values["runtime"]))
        except (AttributeError, TypeError, ValueError):
            out["runtime_ttl"] = None
    if "status" in values:
        status = _json_object(values["status"])
        try:
            out["finished_at"] = lifetime.finished_at({"status": status})
        except (AttributeError, TypeError):
            out["finished_at"] = None
        sample = trainer_status_sample({"status": status})
        out["reported"] = "" if sample is None else sample.time or "-"
        out["progress"] = None if sample is None else _int(sample.progress_percentage)
        out["eta"] = None if sample is None else _int(sample.estimated_remaining_seconds)
        metrics = {} if sample is None else sample.metrics
        out["metrics"] = json.dumps(metrics, separators=(",", ":"))
    return out


class StoredObject(Mapping[str, Any]):
    """A stored TrainJob's JSON object with its status, parsed from the stored text when first
    read, without ``spec.trainer.command``/``args`` (they can be large: a shipped function).
    A listing hands one per job and most are never read."""

    __slots__ = ("_obj", "_status", "_text")

    def __init__(self, text: str, status: str) -> None:
        self._text, self._status = text, status
        self._obj: dict[str, Any] | None = None

    def _object(self) -> dict[str, Any]:
        if self._obj is None:
            obj: dict[str, Any] = json.loads(self._text)
            trainer = (obj.get("spec") or {}).get("trainer")
            if isinstance(trainer, dict):
                trainer.pop("command", None)
                trainer.pop("args", None)
            if self._status not in ("{}", ""):
                obj["status"] = json.loads(self._status)
            self._obj = obj
        return self._obj

    def __getitem__(self, key: str) -> Any:
        return self._object()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._object())

    def __len__(self) -> int:
        return len(self._object())

    def __repr__(self) -> str:
        return repr(self._object())


def listing_summary(
    runtime_ref: str, num_nodes: int | None, reported: str, progress: int | None,
    eta: int | None, metrics: str,
) -> JobSummary:  # fmt: skip
    """A listing's :class:`JobSummary` from the job's listing columns."""
    sample = None
    if reported:
        try:
            values = json.loads(metrics)
        except ValueError:
            values = {}
        sample = MetricSample("" if reported == "-" else reported, values, progress, eta)
    return JobSummary(runtime_ref, num_nodes, sample)
