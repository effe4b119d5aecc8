"""One TrainJob status rule and one wait loop, shared by every backend.

Upstream's backends each derived the status their own way and got it wrong in turn (a local job
never reaching Complete, ``list_jobs`` showing Unknown, Failed not raising). Here:

- ``Complete`` / ``Failed`` when the TrainJob has that condition with status True;
- ``Running`` when it is not suspended and every trainer node is Running or Succeeded;
- ``Created`` otherwise.

``wait_for_job_status`` polls ``get_job``, calls the callbacks, raises ``RuntimeError`` at once
when the job Failed (unless Failed is wanted) and ``TimeoutError`` after ``timeout`` seconds.
The RuntimeError starts with upstream's ``TrainJob NAME is Failed`` and goes on with why, as the
job's events say it (``: jobset failed ...; node-0: ... its log says: ValueError: ...``).
Called by :mod:`trainjob.client.backends`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from trainjob.client import constants as c
from trainjob.client import types
from trainjob.core import times

logger = logging.getLogger(__name__)

Callback = Callable[[types.TrainJob], None]


def job_status(
    conditions: Iterable[Mapping[str, Any]],
    steps: Iterable[types.Step],
    num_nodes: int,
) -> str:
    """The SDK status of a TrainJob from its conditions and its steps (pods)."""
    suspended = False
    for cond in conditions:
        if cond.get("status") != "True":
            continue
        kind = cond.get("type")
        if kind in (c.TRAINJOB_COMPLETE, c.TRAINJOB_FAILED):
            return str(kind)
        if kind == "Suspended":
            suspended = True
    if suspended:
        return c.TRAINJOB_CREATED
    running = sum(
        1
        for s in steps
        if s.name.startswith(c.NODE) and s.status in (c.POD_RUNNING, c.POD_SUCCEEDED)
    )
    if num_nodes > 0 and running >= num_nodes:
        return c.TRAINJOB_RUNNING
    return c.TRAINJOB_CREATED


def _set(values: Iterable[str]) -> str:
    """A set as Python prints one, sorted, so the message is the same every run."""
    return "{" + ", ".join(repr(v) for v in sorted(values)) + "}"


def check_wait_args(status: set[str], timeout: float, polling_interval: float) -> None:
    """Upstream's argument checks for ``wait_for_job_status``."""
    if not isinstance(status, set | frozenset) or not status:
        raise ValueError(f"Expected status {status} must be a non-empty set of statuses")
    if not set(status).issubset(c.TRAINJOB_STATUSES):
        raise ValueError(
            f"Expected status {_set(status)} must be a subset of {_set(c.TRAINJOB_STATUSES)}"
        )
    if polling_interval <= 0:
        raise ValueError(
            f"Polling interval must be a positive number, got polling_interval={polling_interval}"
        )
    if polling_interval >= timeout:  # upstream: one look at timeout == interval is refused too
        raise ValueError(
            "Polling interval must be strictly less than timeout. "
            f"Received polling_interval={polling_interval}, timeout={timeout}"
        )


def wait_for_job_status(
    get_job: Callable[[str], types.TrainJob],
    name: str,
    status: set[str],
    timeout: float,
    polling_interval: float,
    callbacks: list[Callback] | None = None,
    *,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
    reason: Callable[[str], str] | None = None,
) -> types.TrainJob:
    """Poll until the TrainJob reaches one of ``status``; see the module docstring. ``reason``
    says why a job failed (the backend's reading of its events), for the RuntimeError."""
    check_wait_args(status, timeout, polling_interval)
    deadline = clock() + timeout
    while True:
        job = get_job(name)
        logger.debug("TrainJob %s, status %s", name, job.status)
        for callback in callbacks or ():
            callback(job)
        if job.status == c.TRAINJOB_FAILED and c.TRAINJOB_FAILED not in status:
            why = _reason(reason, name)
            raise RuntimeError(f"TrainJob {name} is Failed" + (f": {why}" if why else ""))
        if job.status in status:
            return job
        left = deadline - clock()
        if left <= 0:
            raise TimeoutError(
                f"Timeout waiting for TrainJob {name} to reach status: {status} status"
            )
        sleep(min(polling_interval, left))


def _reason(reason: Callable[[str], str] | None, name: str) -> str:
    """Why ``name`` failed, or "" when that cannot be read (the Failed error is raised anyway)."""
    if reason is None:
        return ""
    try:
        return reason(name)
    except Exception as e:  # the job's verdict matters more than why its events are unreadable
        logger.debug("reading why TrainJob %s failed: %s", name, e)
        return ""


FAILURE_REASONS = frozenset(
    {"Failed", "BackOff", "OOMKilling", "Evicted", "FailedScheduling", "FailedCreate"}
)
"""Event reasons that say why a pod (or its creation) failed: the local kubelet's ``Failed`` (with
what the log says), the cluster kubelet's, the scheduler's and the Job controller's."""


def failure_from_events(events: Iterable[types.Event]) -> str:
    """Why a TrainJob failed, from its events (oldest first): its own last event (the verdict,
    e.g. ``jobset failed due to ...``) and the first pod failure (``node-0: exit code 1; its log
    says: ValueError: ...``)."""
    events = list(events)
    verdict = [e for e in events if e.involved_object_kind == c.TRAINJOB_KIND and e.message]
    pods = [e for e in events if e.reason in FAILURE_REASONS and e.message]
    parts = [verdict[-1].message] if verdict else []
    if pods:
        parts.append(f"{pods[0].involved_object_name}: {pods[0].message}")
    return "; ".join(parts)


def parse_time(value: str | None) -> datetime:
    """An RFC 3339 timestamp (``2025-01-02T03:04:05Z``) as an aware datetime; the epoch when
    absent or unparsable (the SDK's types need a datetime)."""
    return times.parse_datetime(value) or datetime.fromtimestamp(0, UTC)
