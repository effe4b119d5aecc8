"""A job's phases over time, for its page: when it was created, queued or suspended, initializing,
starting, running, restarting, and when it finished, each with the reason that said so.

Neither backend keeps a history of phases: a TrainJob's conditions say what holds now (trainjob's
phase condition, :mod:`trainjob.api.phases`, is removed when its phase ends), so the timeline is
read from every trace a phase leaves, the same on both backends:

* the TrainJob's creation time (Created);
* events, by reason: ``Suspended`` (Suspended, or Queued when Kueue holds the job), ``Resumed`` and
  the pods' ``SuccessfulCreate`` (Starting), JobSet's ``Restarting``, ``AllJobsCompleted``
  (Complete), the Warning of the reason a failed job failed for (Failed);
* the pods' start times: an initializer started (Initializing), every trainer pod started
  (Running);
* the conditions' last transitions: a phase condition (Queued, Initializing, Running,
  Restarting) from the time it was set, ``Suspended`` True or False (Resumed), ``Complete`` or
  ``Failed``;
* the job's own start and completion times where nothing finer says when it ran and ended.

Transitions are ordered by time (to the second, as the API's timestamps are), a phase repeated
is one segment, and nothing is placed after the job finished. Pure: a function of the job
model, tested without a server.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from trainjob.core import times
from trainjob.executor import model as st
from trainjob.executor.model import Event, JobState
from trainjob.executor.steps import DATASET_INITIALIZER, MODEL_INITIALIZER

CREATED, QUEUED, SUSPENDED, INITIALIZING = "Created", "Queued", "Suspended", "Initializing"
STARTING, RUNNING, RESTARTING = "Starting", "Running", "Restarting"
PHASE_CONDITIONS = ("Queued", "Initializing", "Running", "Restarting")
QUEUED_BY_KUEUE = "QueuedByKueue"
KUEUE_QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
_INITIALIZERS = (DATASET_INITIALIZER, MODEL_INITIALIZER)
# Events whose reason says the phase the job went into (the local supervisor's and a cluster's).
_EVENT_PHASES = {
    "Resumed": STARTING,
    "SuccessfulCreate": STARTING,
    "Restarting": RESTARTING,
    "AllJobsCompleted": st.COMPLETE,
}


@dataclass(frozen=True)
class Transition:
    """The job went into ``phase`` at ``at`` (POSIX seconds) for ``reason`` (what said so)."""

    at: float
    phase: str
    reason: str


def transitions(s: JobState, events: Iterable[Event]) -> list[Transition]:
    """Every trace of a phase the job left (the module's list), ordered by time; a phase that
    repeats the one before it is dropped, and nothing comes after the job finished."""
    found: list[tuple[float, int, Transition]] = []

    def add(when: str | None, phase: str, reason: str) -> None:
        at = times.parse(when)
        if at is not None:
            found.append((at, len(found), Transition(at, phase, reason)))

    add(s.created, CREATED, "TrainJob created")
    queue = _queue(s.trainjob)
    for e in events:
        if e.reason == "Suspended":
            add(e.timestamp, QUEUED if queue else SUSPENDED, _reason(e))
        elif e.reason in _EVENT_PHASES:
            add(e.timestamp, _EVENT_PHASES[e.reason], _reason(e))
        elif s.phase == st.FAILED and e.type == "Warning" and e.reason == s.reason:
            add(e.timestamp, st.FAILED, _reason(e))
    _pod_transitions(s, add)
    for k in (s.trainjob.get("status") or {}).get("conditions") or ():
        kind, when, reason = k.get("type"), k.get("lastTransitionTime"), str(k.get("reason") or "")
        true = k.get("status") == "True"
        if kind in PHASE_CONDITIONS and true:
            add(when, str(kind), reason or str(kind))
        elif kind == "Suspended":
            held = QUEUED if queue else SUSPENDED
            add(when, held if true else STARTING, reason or ("Suspended" if true else "Resumed"))
        elif kind in (st.COMPLETE, st.FAILED) and true:
            add(when, str(kind), reason or str(kind))
    if s.finished:
        add(s.completed, s.phase, s.reason or s.phase)
    ordered = [t for _, _, t in sorted(found, key=lambda x: (x[0], x[1]))]
    if not any(t.phase == RUNNING for t in ordered) and s.started:
        add(s.started, RUNNING, "started")
        ordered = [t for _, _, t in sorted(found, key=lambda x: (x[0], x[1]))]
    out: list[Transition] = []
    for t in ordered:
        if out and out[-1].phase in st.FINISHED:
            break
        if s.finished and t.phase in st.FINISHED and t.phase != s.phase:
            continue  # a Failed warning of an attempt the job then got past
        if out and out[-1].phase == t.phase:
            continue
        if out and out[-1].at == t.at and out[-1].phase not in (CREATED, *st.FINISHED):
            out.pop()  # two phases in one second: the later one says where it went
            if out and out[-1].phase == t.phase:
                continue
        out.append(t)
    return out


def timeline(
    s: JobState, events: Iterable[Event], now: float | None = None
) -> list[dict[str, Any]]:
    """The job's phases as segments: phase, reason, start and end (RFC 3339; the end of the last
    one is the job's completion, or None while it lasts), and seconds (until ``now`` for the
    current one). A finished job's last segment is its end: Complete or Failed, of no length."""
    ts = transitions(s, events)
    end_now = times.parse(times.now()) if now is None else now
    out = []
    for i, t in enumerate(ts):
        nxt = ts[i + 1].at if i + 1 < len(ts) else None
        last = nxt is None
        final = last and t.phase in st.FINISHED
        until = t.at if final else (nxt if nxt is not None else end_now)
        out.append(
            {
                "phase": t.phase,
                "reason": t.reason,
                "start": times.format(t.at),
                "end": None if last and not final else times.format(until or t.at),
                "seconds": max(0.0, (until or t.at) - t.at),
            }
        )
    return out


def _reason(e: Event) -> str:
    return f"{e.reason}: {e.message}" if e.message else e.reason


def _queue(trainjob: Mapping[str, Any]) -> str:
    labels = (trainjob.get("metadata") or {}).get("labels") or {}
    return str(labels.get(KUEUE_QUEUE_LABEL) or "")


def _pod_transitions(s: JobState, add: Callable[[str | None, str, str], None]) -> None:
    """Initializing when an initializer pod started; Running when every trainer pod had (the
    pods of the latest attempt: a restart starts them again)."""
    pods = [p for p in s.pods if p.runs]
    inits = [p.started for p in pods if p.job in _INITIALIZERS and p.started]
    if inits:
        add(min(inits, key=lambda x: times.parse(x) or 0.0), INITIALIZING, "InitializerRunning")
    trainers = [p for p in pods if p.job not in _INITIALIZERS]
    if trainers and all(p.started for p in trainers):
        last = max((p.started for p in trainers if p.started), key=lambda x: times.parse(x) or 0.0)
        add(last, RUNNING, f"AllTrainerPodsRunning: {len(trainers)} pod(s)")
