"""TrainJob status as the cluster shows it, written for local processes.

The conditions are upstream's with upstream's reasons and messages (the rules:
:mod:`trainjob.api.conditions`; JobSet's reasons: :mod:`trainjob.core.jobset`), set on a status
dict (the TrainJob's ``status`` as stored). The local backend adds reasons for what only happens
here (a supervisor that died, a pod that cannot run on this machine). Used by the supervisor
(writing) and the executor (a dead supervisor).
"""

from __future__ import annotations

from typing import Any

from trainjob.api import conditions as tc
from trainjob.core import conditions

# Local only.
REASON_SUPERVISOR_DIED = "SupervisorDied"
REASON_SUPERVISOR_ERROR = "SupervisorError"
REASON_POD_CONFIG_ERROR = "CreateContainerConfigError"


def _conditions(status: dict[str, Any]) -> list[conditions.Condition]:
    conds: list[conditions.Condition] = status.setdefault("conditions", [])
    return conds


def condition(status: dict[str, Any], ctype: str) -> dict[str, Any] | None:
    found = conditions.find(status.get("conditions"), ctype)
    return None if found is None else dict(found)


def is_true(status: dict[str, Any], ctype: str) -> bool:
    return conditions.is_true(status.get("conditions"), ctype)


def suspended(status: dict[str, Any], now: str) -> bool:
    return tc.set_suspended(_conditions(status), True, now)


def resumed(status: dict[str, Any], now: str) -> bool:
    """Suspended=False/Resumed, only if the job was suspended (as the TrainJob controller)."""
    return tc.set_suspended(_conditions(status), False, now)


def failed(status: dict[str, Any], reason: str, message: str, now: str) -> bool:
    return tc.set_failed(_conditions(status), reason, message, now)


def complete(status: dict[str, Any], now: str) -> bool:
    return tc.set_complete(_conditions(status), now)
