"""Views of the store's rows as the job model: a stored job as a ``JobState``, ``PodState`` or
``TrainJob``.

A row may be damaged (hand-edited, written by an older version): :func:`problem` says what is wrong
with it so that readers report it and go on, never hiding the other jobs. Used by
:mod:`trainjob.local.client.executor`.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from trainjob.executor.model import JobState, PodState
from trainjob.local.state.store import JobRow, PodRow

if TYPE_CHECKING:  # the models (pydantic) load when a TrainJob is read whole
    from trainjob.api.trainer import TrainJob


def problem(row: JobRow) -> str | None:
    """What makes a stored job unreadable (a damaged or hand-edited row), or None."""
    try:
        if not isinstance(json.loads(row.trainjob), dict):
            return "its TrainJob is not a JSON object"
        if not isinstance(json.loads(row.status or "{}"), dict):
            return "its status is not a JSON object"
        float(row.created_ts)
        if not isinstance(row.restarts, int):
            return f"restarts is {row.restarts!r}, not a number"
    except (TypeError, ValueError) as e:
        return f"{type(e).__name__}: {e}"
    return None


def pod_state(p: PodRow) -> PodState:
    return PodState(
        job=p.job,
        index=p.idx,
        name=p.pod_name,
        phase=p.phase,
        exit_code=p.exit_code,
        started=p.started,
        finished=p.finished,
        restarts=p.restarts,
        job_index=p.job_index,
        message=p.message,
        ready=p.ready,
    )


def job_object(trainjob: str, status: str) -> dict[str, Any]:
    """The stored TrainJob's JSON object with its status."""
    obj: dict[str, Any] = json.loads(trainjob)
    if status not in ("{}", ""):
        obj["status"] = json.loads(status)
    return obj


def job_state(
    row: JobRow, pod_states: tuple[PodState, ...], trainjob: dict[str, Any] | None = None
) -> JobState:
    return JobState(
        name=row.name,
        namespace=row.namespace,
        phase=row.phase,
        created=row.created,
        started=row.started,
        completed=row.completed,
        restarts=row.restarts,
        reason=row.reason,
        message=row.message,
        pods=pod_states,
        trainjob=trainjob or {},
    )


def trainjob_of(row: JobRow) -> TrainJob:
    """The stored TrainJob with its status, parsed once (no dict in between)."""
    text = row.trainjob
    if row.status not in ("{}", ""):
        text = text[: text.rindex("}")] + ', "status": ' + row.status + "}"
    from trainjob.api.trainer import TrainJob

    return TrainJob.model_validate_json(text)
