"""TrainJob conditions: the rules both executors apply, over :mod:`trainjob.core.conditions`.

Upstream's condition types (Suspended, Complete, Failed) with their reasons and messages
(:mod:`trainjob.api.constants`), and what trainjob adds without renaming any: ``RuntimeNotFound``
while the referenced runtime does not exist (removed once it does, so a healthy TrainJob's status
is upstream's). The controller sets them from the JobSet; the local supervisor and executor set the
same ones for processes, so a TrainJob reads alike on a cluster and here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from trainjob.api import constants as c
from trainjob.core import conditions as cond
from trainjob.core import jobset as js

Condition = cond.Condition

# trainjob's own: the referenced runtime does not exist (yet).
CONDITION_RUNTIME_NOT_FOUND = "RuntimeNotFound"
REASON_RUNTIME_NOT_FOUND = "TrainingRuntimeNotFound"


def is_finished(conditions: Iterable[Mapping[str, Any]] | None) -> bool:
    """Upstream ``IsTrainJobFinished``: Complete or Failed is True."""
    conds = list(conditions or ())
    return cond.is_true(conds, c.CONDITION_COMPLETE) or cond.is_true(conds, c.CONDITION_FAILED)


def set_suspended(conditions: list[Condition], suspend: bool, now: str | None = None) -> bool:
    """Upstream ``setSuspendedCondition``: ``Suspended=True/Suspended`` while ``spec.suspend``;
    ``Suspended=False/Resumed`` once it was True and no longer is; else nothing."""
    if suspend:
        return cond.set_condition(
            conditions,
            c.CONDITION_SUSPENDED,
            cond.TRUE,
            c.REASON_SUSPENDED,
            c.MESSAGE_SUSPENDED,
            now=now,
        )
    if cond.is_true(conditions, c.CONDITION_SUSPENDED):
        return cond.set_condition(
            conditions,
            c.CONDITION_SUSPENDED,
            cond.FALSE,
            c.REASON_RESUMED,
            c.MESSAGE_RESUMED,
            now=now,
        )
    return False


def set_failed(
    conditions: list[Condition], reason: str, message: str, now: str | None = None
) -> bool:
    return cond.set_condition(conditions, c.CONDITION_FAILED, cond.TRUE, reason, message, now=now)


def set_complete(conditions: list[Condition], now: str | None = None) -> bool:
    """``Complete=True`` with the JobSet's reason and message (what the TrainJob copies)."""
    return cond.set_condition(
        conditions,
        c.CONDITION_COMPLETE,
        cond.TRUE,
        js.REASON_ALL_JOBS_COMPLETED,
        js.MESSAGE_ALL_JOBS_COMPLETED,
        now=now,
    )
