"""How long a TrainJob lives: its active deadline and its TTL after it finished.

KEP-2899 as amended by kubeflow/trainer#3824: ``spec.activeDeadlineSeconds`` and
``spec.ttlSecondsAfterFinished`` on the TrainJob, defaulted from the runtime's
``spec.runPolicy`` (a TrainJob's own value wins). The TTL counts from the Complete or Failed
condition's ``lastTransitionTime`` (what the status says, so a restarted controller or a new
reader counts the same); when it has run out the TrainJob is deleted, its outputs kept. Plain
dicts in, so the controller, the local executor and its supervisor share one rule.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from trainjob.core import times

_FINISHED = ("Complete", "Failed")


def _run_policy(runtime: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return ((runtime or {}).get("spec") or {}).get("runPolicy") or {}


def ttl_seconds(trainjob: Mapping[str, Any], runtime: Mapping[str, Any] | None) -> int | None:
    """``spec.ttlSecondsAfterFinished``, else the runtime's ``runPolicy``'s, else None."""
    value = (trainjob.get("spec") or {}).get("ttlSecondsAfterFinished")
    if value is None:
        value = _run_policy(runtime).get("ttlSecondsAfterFinished")
    return None if value is None else int(value)


def active_deadline(trainjob: Mapping[str, Any], runtime: Mapping[str, Any] | None) -> int | None:
    """``spec.activeDeadlineSeconds``, else the runtime's ``runPolicy``'s, else None."""
    value = (trainjob.get("spec") or {}).get("activeDeadlineSeconds")
    if value is None:
        value = _run_policy(runtime).get("activeDeadlineSeconds")
    return None if value is None else int(value)


def finished_at(trainjob: Mapping[str, Any]) -> float | None:
    """When the TrainJob became Complete or Failed (its condition's lastTransitionTime)."""
    for cond in (trainjob.get("status") or {}).get("conditions") or ():
        if cond.get("type") in _FINISHED and cond.get("status") == "True":
            return times.parse(cond.get("lastTransitionTime"))
    return None


def ttl_remaining(
    trainjob: Mapping[str, Any], runtime: Mapping[str, Any] | None, now: float
) -> float | None:
    """Seconds until a finished TrainJob is to be deleted (<= 0: now); None when it is not
    finished or has no TTL."""
    ttl = ttl_seconds(trainjob, runtime)
    done = finished_at(trainjob)
    if ttl is None or done is None:
        return None
    return done + ttl - now
