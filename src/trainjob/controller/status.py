"""TrainJob status from its JobSet, suspension, and the active deadline (pure functions).

(The TrainJob's status from its JobSet is the JobSet plugin's ``status`` extension point:
:mod:`trainjob.runtime.plugins.jobset`.)
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
from trainjob.core import lifetime, times
from trainjob.core.conditions import Condition

Obj = dict[str, Any]


def deadline(
    trainjob: Obj, conditions: list[Condition], now: float, runtime: Obj | None = None
) -> float | None:
    """Seconds until ``activeDeadlineSeconds`` (else the runtime's ``runPolicy``'s) runs out
    (<= 0: exceeded); None if not applicable."""
    spec = trainjob.get("spec") or {}
    seconds = lifetime.active_deadline(trainjob, runtime)
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
