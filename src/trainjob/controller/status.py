"""TrainJob status from its JobSet, suspension, and the active deadline (pure functions).

* :func:`apply_jobset_status`: a JobSet ``Completed=True`` becomes TrainJob ``Complete``, ``Failed=True``
  becomes ``Failed`` (same status, reason, message and time), and ``jobsStatus`` is copied from
  ``replicatedJobsStatus`` (upstream JobSet plugin ``Status``).
* :func:`deadline`: for ``activeDeadlineSeconds``, seconds left or None when it does not apply;
  the clock starts at creation or at the last resume.
* :func:`state`: one word for a TrainJob (metrics and logs): Complete, Failed, Suspended, Running,
  Pending (no JobSet yet) or RuntimeNotFound.

Used by ``trainjob.controller.reconcile`` and ``trainjob.controller.metrics``.
"""

from __future__ import annotations

from typing import Any

from trainjob.api import conditions as tc
from trainjob.api import constants as c
from trainjob.core import conditions as cond
from trainjob.core import jobset as js
from trainjob.core import times
from trainjob.core.conditions import Condition

Obj = dict[str, Any]

JOB_STATUS_FIELDS = ("ready", "succeeded", "failed", "active", "suspended")


def jobs_status(jobset: Obj) -> list[Obj]:
    """``status.jobsStatus`` of the TrainJob: one entry per replicated job, counts as integers."""
    out: list[Obj] = []
    for rj in (jobset.get("status") or {}).get("replicatedJobsStatus") or ():
        entry: Obj = {"name": rj.get("name", "")}
        for f in JOB_STATUS_FIELDS:
            entry[f] = int(rj.get(f) or 0)
        out.append(entry)
    return out


def apply_jobset_status(conditions: list[Condition], jobset: Obj) -> list[Obj]:
    """Copy the JobSet's terminal conditions into ``conditions``; return the new jobsStatus."""
    js_conditions = (jobset.get("status") or {}).get("conditions") or []
    for js_type, tj_type in (
        (js.CONDITION_COMPLETED, c.CONDITION_COMPLETE),
        (js.CONDITION_FAILED, c.CONDITION_FAILED),
    ):
        js_cond = cond.find(js_conditions, js_type)
        if js_cond is None or js_cond.get("status") != cond.TRUE:
            continue
        cond.set_condition(
            conditions,
            tj_type,
            cond.TRUE,
            str(js_cond.get("reason") or ""),
            str(js_cond.get("message") or ""),
            last_transition_time=js_cond.get("lastTransitionTime"),
        )
    return jobs_status(jobset)


def deadline(trainjob: Obj, conditions: list[Condition], now: float) -> float | None:
    """Seconds until ``activeDeadlineSeconds`` runs out (<= 0: exceeded); None if not applicable."""
    spec = trainjob.get("spec") or {}
    seconds = spec.get("activeDeadlineSeconds")
    if not seconds or tc.is_finished(conditions) or spec.get("suspend"):
        return None
    start = times.parse((trainjob.get("metadata") or {}).get("creationTimestamp"))
    suspended = cond.find(conditions, c.CONDITION_SUSPENDED)
    if suspended is not None and suspended.get("status") == cond.FALSE:
        start = times.parse(suspended.get("lastTransitionTime"))
    if start is None:
        return None
    return start + float(seconds) - now


def state(trainjob: Obj, has_jobset: bool) -> str:
    conditions = (trainjob.get("status") or {}).get("conditions") or []
    if cond.is_true(conditions, c.CONDITION_COMPLETE):
        return "Complete"
    if cond.is_true(conditions, c.CONDITION_FAILED):
        return "Failed"
    if (trainjob.get("spec") or {}).get("suspend"):
        return "Suspended"
    if cond.is_true(conditions, tc.CONDITION_RUNTIME_NOT_FOUND):
        return "RuntimeNotFound"
    return "Running" if has_jobset else "Pending"
