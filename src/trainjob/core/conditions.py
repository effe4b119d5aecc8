"""Status conditions with apimachinery's ``meta.SetStatusCondition`` semantics.

Conditions are plain dicts (``type``, ``status``, ``reason``, ``message``, ``lastTransitionTime``),
as a status subresource stores them. :func:`set_condition` appends a condition it has not seen;
for one it has, it changes ``lastTransitionTime`` only when ``status`` flips, and updates reason and
message in place; it reports whether anything changed, so a caller writes status only then.

Used by the controller (TrainJob status from its JobSet), the local supervisor and executor (the
same conditions without a cluster), and the readers that map conditions to a phase.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from trainjob.core import times

Condition = dict[str, Any]

TRUE = "True"
FALSE = "False"
UNKNOWN = "Unknown"


def find(conditions: Iterable[Mapping[str, Any]] | None, type_: str) -> Any:
    """The condition of ``type_`` (the object itself, so callers may change it), or None."""
    for cond in conditions or ():
        if cond.get("type") == type_:
            return cond
    return None


def is_true(conditions: Iterable[Mapping[str, Any]] | None, type_: str) -> bool:
    cond = find(conditions, type_)
    return cond is not None and cond.get("status") == TRUE


def set_condition(
    conditions: list[Condition],
    type_: str,
    status: str | bool,
    reason: str,
    message: str,
    *,
    now: str | None = None,
    last_transition_time: str | None = None,
) -> bool:
    """Set one condition in place; True when anything changed.

    ``status`` is ``"True"``/``"False"``/``"Unknown"`` or a bool. A new or flipped condition gets
    ``last_transition_time`` (a time copied from another object's condition), else ``now``, else
    the current time.
    """
    want = (TRUE if status else FALSE) if isinstance(status, bool) else status
    cur = find(conditions, type_)
    if cur is None:
        conditions.append(
            {
                "type": type_,
                "status": want,
                "reason": reason,
                "message": message,
                "lastTransitionTime": last_transition_time or now or times.now(),
            }
        )
        return True
    changed = False
    if cur.get("status") != want:
        cur["status"] = want
        cur["lastTransitionTime"] = last_transition_time or now or times.now()
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
