"""What the dashboard's pages show, as plain JSON-able dicts built from the job model.

Pure functions of :class:`~trainjob.executor.model.JobState` and friends (no I/O), so the Jobs
table, a job's page and the runtimes page show the same fields whatever backend the executor
is, and a unit test pins each without a server. The browser renders these values with
``textContent`` only (``static/dashboard.js``): nothing here is HTML.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from trainjob.api import constants as c
from trainjob.api.trainer import Runtime
from trainjob.dashboard import timeline
from trainjob.executor.model import (
    Event,
    JobState,
    MetricSample,
    Output,
    PodState,
    trainer_status_sample,
)
from trainjob.executor.steps import step_name

LOSS_NAMES = ("loss", "train_loss", "train/loss", "training_loss")
"""The metric names read as "the loss" for the Jobs table, in this order (the LLM trainer and
transformers' Kubeflow callback report ``loss``; other loops spell it otherwise)."""


def progress(trainjob: Mapping[str, Any]) -> dict[str, Any] | None:
    """``status.trainerStatus`` as the pages show it: percent, ETA, every metric, when."""
    sample = trainer_status_sample(trainjob)
    if sample is None:
        return None
    return {
        "percent": sample.progress_percentage,
        "eta": sample.estimated_remaining_seconds,
        "metrics": dict(sample.metrics),
        "updated": sample.time,
    }


def job_row(s: JobState) -> dict[str, Any]:
    """One row of the Jobs table (what ``trainjob get jobs -o wide`` prints, and progress).
    Read from the state's runtime name, nodes and latest report: a listing makes a thousand of
    these, and the local one answers them without parsing a TrainJob (``JobState.summary``)."""
    p = s.progress
    loss = None
    if p is not None:
        loss = next((str(p.metrics[n]) for n in LOSS_NAMES if n in p.metrics), None)
    return {
        "namespace": s.namespace,
        "name": s.name,
        "runtime": s.runtime_name,
        "phase": s.phase,
        "reason": s.reason,
        "progress": p.progress_percentage if p is not None else None,
        "eta": p.estimated_remaining_seconds if p is not None else None,
        "loss": loss,
        "nodes": s.num_nodes,
        "restarts": s.restarts,
        "created": s.created,
        "started": s.started,
        "completed": s.completed,
    }


def pod_row(p: PodState) -> dict[str, Any]:
    return {
        "step": step_name(*p.step),
        "name": p.name,
        "phase": p.phase,
        "ready": p.ready,
        "exitCode": p.exit_code,
        "started": p.started,
        "finished": p.finished,
        "restarts": p.restarts,
        "message": p.message,
        "logs": p.runs,
    }


def event_row(e: Event) -> dict[str, Any]:
    return {
        "type": e.type,
        "reason": e.reason,
        "message": e.message,
        "time": e.timestamp,
        "object": f"{e.involved_kind.lower()}/{e.involved_name}",
    }


def job_detail(
    s: JobState,
    events: Iterable[Event],
    *,
    log_location: str | None = None,
    outputs: Iterable[Output] = (),
) -> dict[str, Any]:
    """A job's page: its row, the sweep it is a trial of (None: none), conditions, its phases over time (:mod:`.timeline`), replicated
    jobs, steps (pods), events, progress."""
    status = s.trainjob.get("status") or {}
    labels = (s.trainjob.get("metadata") or {}).get("labels") or {}
    events = list(events)
    return {
        **job_row(s),
        "message": s.message,
        "sweep": labels.get(c.LABEL_OPTIMIZATION_JOB),
        "suspended": bool(s.spec.get("suspend")),
        "progressDetail": progress(s.trainjob),
        "conditions": [
            {
                "type": k.get("type", ""),
                "status": k.get("status", ""),
                "reason": k.get("reason", ""),
                "message": k.get("message", ""),
                "time": k.get("lastTransitionTime", ""),
            }
            for k in status.get("conditions") or ()
        ],
        "jobs": [
            {
                "name": j.get("name", ""),
                **{k: j.get(k) or 0 for k in ("ready", "succeeded", "failed", "active")},
                "suspended": j.get("suspended") or 0,
            }
            for j in status.get("jobsStatus") or ()
        ],
        "timeline": timeline.timeline(s, events),
        "pods": [pod_row(p) for p in s.pods],
        "events": [event_row(e) for e in events],
        "logLocation": log_location,
        "outputs": [
            {"name": o.name, "location": o.location, "description": o.description} for o in outputs
        ],
    }


def sample_point(sample: MetricSample) -> dict[str, Any]:
    """One progress report for the curves: its time and every metric that is a number."""
    values = {}
    for name in sample.metrics:
        v = sample.number(name)
        if v is not None:
            values[name] = v
    return {
        "time": sample.time,
        "progress": sample.progress_percentage,
        "values": values,
    }


def runtime_row(r: Runtime) -> dict[str, Any]:
    """A runtime with its ML policy (framework, nodes, processes per node) and its steps."""
    labels = r.metadata.labels or {}
    policy = r.spec.ml_policy
    policy_dict = policy.to_dict() if policy is not None else {}
    steps = []
    for rj in r.spec.template.spec.replicated_jobs or ():
        images = [ctr.image or "" for ctr in rj.template.spec.template.spec.containers]
        steps.append({"name": rj.name, "replicas": rj.replicas or 1, "images": images})
    return {
        "kind": r.kind,
        "namespace": r.metadata.namespace or "",
        "name": r.metadata.name or "",
        "framework": labels.get(c.LABEL_FRAMEWORK, ""),
        "nodes": policy.num_nodes if policy and policy.num_nodes else 1,
        "mlPolicy": policy_dict,
        "steps": steps,
    }
