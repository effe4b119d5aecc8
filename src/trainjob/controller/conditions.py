"""TrainJob conditions: set, find and remove with Kubernetes ``meta.SetStatusCondition`` semantics.

:func:`set_condition` changes nothing when the condition is already so; it keeps
``lastTransitionTime`` unless the ``status`` flips (reason and message alone update in place) and
appends a condition it has not seen. Conditions are plain dicts (``type``, ``status``, ``reason``,
``message``, ``lastTransitionTime``), as the status subresource stores them. The condition types,
reasons and messages live in :mod:`trainjob.api.constants` next to each other.

Used by ``trainjob.controller.status`` and ``trainjob.controller.reconcile``.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from trainjob.api import constants as c

Condition = dict[str, Any]

TRUE = "True"
FALSE = "False"

# A condition trainjob adds where upstream has none: the referenced runtime does not exist (yet).
# It is removed again once the runtime is found, so a healthy TrainJob's status is upstream's.
CONDITION_RUNTIME_NOT_FOUND = "RuntimeNotFound"
REASON_RUNTIME_NOT_FOUND = "TrainingRuntimeNotFound"


def now_rfc3339() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def find(conditions: list[Condition], type_: str) -> Condition | None:
    for cond in conditions:
        if cond.get("type") == type_:
            return cond
    return None


def is_true(conditions: list[Condition], type_: str) -> bool:
    cond = find(conditions, type_)
    return cond is not None and cond.get("status") == TRUE


def set_condition(
    conditions: list[Condition],
    type_: str,
    status: str,
    reason: str,
    message: str,
    *,
    last_transition_time: str | None = None,
    now: str | None = None,
) -> bool:
    """Set one condition in place; True when anything changed."""
    cur = find(conditions, type_)
    if cur is None:
        conditions.append(
            {
                "type": type_,
                "status": status,
                "reason": reason,
                "message": message,
                "lastTransitionTime": last_transition_time or now or now_rfc3339(),
            }
        )
        return True
    changed = False
    if cur.get("status") != status:
        cur["status"] = status
        cur["lastTransitionTime"] = last_transition_time or now or now_rfc3339()
        changed = True
    if cur.get("reason") != reason:
        cur["reason"] = reason
        changed = True
    if cur.get("message") != message:
        cur["message"] = message
        changed = True
    return changed


def remove(conditions: list[Condition], type_: str) -> bool:
    """Remove the condition of ``type_``; True when there was one."""
    for i, cond in enumerate(conditions):
        if cond.get("type") == type_:
            del conditions[i]
            return True
    return False


def is_finished(conditions: list[Condition]) -> bool:
    """Upstream ``IsTrainJobFinished``: Complete or Failed is True."""
    return is_true(conditions, c.CONDITION_COMPLETE) or is_true(conditions, c.CONDITION_FAILED)
