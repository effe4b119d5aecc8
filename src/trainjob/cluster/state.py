"""A TrainJob, its JobSet and its pods as the job model: pure functions, no API calls.

:func:`job_state` maps what the apiserver holds to the :class:`~trainjob.executor.model.JobState`
the local store gives, so both backends read alike: phase Complete or Failed from the TrainJob's
condition, Suspended while ``spec.suspend``, Running once a pod runs (or has run), else Created.
:func:`about_trainjob` says which core Events belong to a TrainJob (its own, its JobSet's and
PodGroup's, its Jobs' and pods'), the rule the Kubeflow SDK uses too.

Used by :class:`trainjob.cluster.executor.KubernetesExecutor`.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

from trainjob.api import constants as c
from trainjob.core import jobset as js
from trainjob.core import times
from trainjob.executor import model as st

Obj = dict[str, Any]


def meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def _int(value: Any, default: int = 0) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


def step_container(pod: Mapping[str, Any], job: str) -> Mapping[str, Any] | None:
    """The container whose log a step shows: the one named like the step's job (``node``,
    ``dataset-initializer``; an MPI launcher's is ``node``), else the first."""
    containers = (pod.get("spec") or {}).get("containers") or ()
    for name in (job, c.CONTAINER_NODE):
        for ctr in containers:
            if ctr.get("name") == name:
                return dict(ctr)
    return dict(containers[0]) if containers else None


def pod_state(pod: Mapping[str, Any]) -> st.PodState:
    """One pod of a JobSet as the job model reports a pod."""
    m, status = meta(pod), pod.get("status") or {}
    labels, notes = m.get("labels") or {}, m.get("annotations") or {}
    terminated = [
        (cs.get("state") or {}).get("terminated") or {}
        for cs in status.get("containerStatuses") or ()
    ]
    ended = [t for t in terminated if t]
    failed = next((t for t in ended if t.get("exitCode")), None)
    last = failed or (ended[0] if ended else None)
    ready = any(
        k.get("type") == "Ready" and k.get("status") == "True"
        for k in status.get("conditions") or ()
    )
    message = status.get("message") or ""
    if not message and failed:
        message = failed.get("message") or failed.get("reason") or ""
    job = labels.get(js.LABEL_REPLICATED_JOB_NAME, "")
    ctr = step_container(pod, job) or {}
    return st.PodState(
        job=job,
        index=_int(labels.get(js.LABEL_COMPLETION_INDEX, notes.get(js.LABEL_COMPLETION_INDEX))),
        name=m.get("name", ""),
        phase=status.get("phase") or st.POD_PENDING,
        exit_code=None if last is None else _int(last.get("exitCode")),
        started=status.get("startTime"),
        finished=last.get("finishedAt") if last and len(ended) == len(terminated) else None,
        restarts=_int(labels.get(js.LABEL_RESTART_ATTEMPT)),
        job_index=_int(labels.get(js.LABEL_JOB_INDEX)),
        message=message,
        ready=ready,
        resources=dict(ctr.get("resources") or {}),
        env={
            str(e.get("name")): str(e["value"])
            for e in ctr.get("env") or ()
            if isinstance(e, Mapping) and "value" in e
        },
    )


def job_state(
    trainjob: Mapping[str, Any], jobset: Mapping[str, Any] | None, pods: Sequence[Mapping[str, Any]]
) -> st.JobState:
    """A TrainJob, its JobSet (None before it exists) and its pods -> the job model.

    Started: the first pod's start; completed: when the Complete/Failed condition turned True;
    restarts: the JobSet's. Pods are ordered as the JobSet's replicatedJobs, then by index; of a
    step's pods (a Job's retries, a restart's new pods) the newest stands for the step.
    """
    m, spec = meta(trainjob), trainjob.get("spec") or {}
    conditions = (trainjob.get("status") or {}).get("conditions") or []
    order = [
        rj.get("name") for rj in ((jobset or {}).get("spec") or {}).get("replicatedJobs") or ()
    ]
    newest: dict[tuple[str, int, int], tuple[str, st.PodState]] = {}
    for p in pods:
        s = pod_state(p)
        created = str(meta(p).get("creationTimestamp") or "")
        if s.step not in newest or created >= newest[s.step][0]:
            newest[s.step] = (created, s)
    states = sorted(
        (s for _, s in newest.values()),
        key=lambda p: (order.index(p.job) if p.job in order else len(order), p.job_index, p.index),
    )
    phase, reason, message, completed = st.CREATED, "", "", None
    for cond in conditions:
        if cond.get("status") == "True" and cond.get("type") in (st.COMPLETE, st.FAILED):
            phase, completed = cond["type"], cond.get("lastTransitionTime")
            reason, message = cond.get("reason") or "", cond.get("message") or ""
            break
    else:
        if spec.get("suspend"):
            phase = st.SUSPENDED
        elif any(p.phase != st.POD_PENDING for p in states):
            phase = st.RUNNING
    starts = sorted(p.started for p in states if p.started)
    return st.JobState(
        name=m.get("name", ""),
        namespace=m.get("namespace", ""),
        phase=phase,
        created=m.get("creationTimestamp") or "",
        started=starts[0] if starts else None,
        completed=completed,
        restarts=_int(((jobset or {}).get("status") or {}).get("restarts")),
        reason=reason,
        message=message,
        pods=tuple(states),
        trainjob=trainjob,
    )


def about_trainjob(event: Mapping[str, Any], name: str, pods: Collection[str | None]) -> bool:
    """Whether a core Event is about TrainJob ``name``: the TrainJob, its JobSet and PodGroup, its
    Jobs and PodGroups (``name-...``) or one of its ``pods``."""
    obj = event.get("involvedObject") or {}
    kind, obj_name = obj.get("kind", ""), str(obj.get("name", ""))
    return (
        (kind in (c.TRAINJOB_KIND, "JobSet", c.POD_GROUP_KIND) and obj_name == name)
        or (kind == "Pod" and obj_name in pods)
        or (kind in ("Job", c.POD_GROUP_KIND) and obj_name.startswith(f"{name}-"))
    )


def event(ev: Mapping[str, Any]) -> st.Event:
    """A core Event as the job model's; its time is when it was first recorded (the SDK's
    ``event_time``)."""
    obj = ev.get("involvedObject") or {}
    when = (
        ev.get("eventTime")
        or ev.get("firstTimestamp")
        or ev.get("lastTimestamp")
        or meta(ev).get("creationTimestamp")
    )
    seconds = times.parse(str(when)) if when else None
    return st.Event(
        type=ev.get("type") or "Normal",
        reason=ev.get("reason") or "",
        message=ev.get("message") or "",
        timestamp=times.format(seconds) if seconds is not None else "",
        involved_kind=obj.get("kind", ""),
        involved_name=obj.get("name", ""),
    )
