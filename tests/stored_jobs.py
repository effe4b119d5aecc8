"""Jobs written straight into a real local store (no supervisor, no processes): finished jobs
with the status, pods, events, progress and log files a run leaves, for the dashboard's unit
tests and its 1,000-job benchmark. A finished job is what the store holds without a process
behind it (a live phase with no supervisor reads as Failed)."""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path
from typing import Any

from trainjob.core import times
from trainjob.local.client.executor import LocalExecutor
from trainjob.local.state import home as homes
from trainjob.local.state.store import EventRow, JobRow, PodRow


def trainer_status(
    progress: int | None, eta: int | None, metrics: dict[str, str], when: str | None = None
) -> dict[str, Any]:
    ts: dict[str, Any] = {"lastUpdatedTime": when or times.now()}
    if progress is not None:
        ts["progressPercentage"] = progress
    if eta is not None:
        ts["estimatedRemainingSeconds"] = eta
    ts["metrics"] = [{"name": k, "value": v} for k, v in metrics.items()]
    return ts


def store_job(
    ex: LocalExecutor,
    name: str,
    namespace: str = "default",
    *,
    phase: str = "Complete",
    runtime: str = "torch-distributed",
    nodes: int = 2,
    restarts: int = 0,
    message: str = "jobset completed successfully",
    status: dict[str, Any] | None = None,
    events: list[tuple[str, str, str]] = (),  # type: ignore[assignment]
    logs: dict[str, list[str]] | None = None,
    labels: dict[str, str] | None = None,
) -> None:
    """A finished TrainJob ``namespace/name`` in ``ex``'s store, as a run leaves it."""
    uid = str(uuid.uuid4())
    created = times.format(time.time() - 120)
    tj = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": uid,
            "creationTimestamp": created,
            **({"labels": labels} if labels else {}),
        },
        "spec": {"runtimeRef": {"name": runtime}, "trainer": {"numNodes": nodes}},
    }
    reason = "AllJobsCompleted" if phase == "Complete" else "FailedJobs"
    cond = {
        "type": phase,
        "status": "True",
        "reason": reason,
        "message": message,
        "lastTransitionTime": times.now(),
    }
    full_status = {"conditions": [cond], **(status or {})}
    ex.store.insert_job(
        JobRow(
            namespace=namespace,
            name=name,
            uid=uid,
            created=created,
            created_ts=time.time() - 120,
            trainjob=json.dumps(tj),
            runtime="{}",
            plan="[]",
            cwd=str(ex.home),
            phase=phase,
            reason=reason,
            message=message,
            status=json.dumps(full_status),
            started=created,
            completed=times.now(),
            restarts=restarts,
        )
    )
    ex.store.put_pods(
        [
            PodRow(
                namespace=namespace,
                name=name,
                uid=uid,
                job="node",
                job_index=0,
                idx=i,
                pod_name=f"{name}-node-0-{i}-abcde",
                phase="Succeeded" if phase == "Complete" else "Failed",
                exit_code=0 if phase == "Complete" else 1,
                started=created,
                finished=times.now(),
            )
            for i in range(nodes)
        ]
    )
    for type_, reason_, msg in events:
        ex.store.add_event(
            EventRow(namespace, name, uid, type_, reason_, msg, times.now(), "TrainJob", name)
        )
    for step, lines in (logs or {}).items():
        index = int(step.rsplit("-", 1)[1])
        path = Path(homes.log_path(ex.home, namespace, name, "node", index, 0))
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(line + "\n" for line in lines))


def store_sweep(
    ex: LocalExecutor,
    name: str,
    trials: list[tuple[dict[str, str], str | None, str]],
    namespace: str = "default",
    *,
    metric: str = "loss",
    direction: str = "Minimize",
    parameters: list[dict[str, Any]] | None = None,
    algorithm: dict[str, Any] | None = None,
) -> None:
    """A finished OptimizationJob ``namespace/name`` in ``ex``'s store, as its supervisor leaves
    it: ``trials`` are (parameters, objective, phase), stored as its TrainJobs ``name-0``, ... (a
    trial that failed as a Failed job), the best by ``direction`` as its result."""
    from trainjob.api import constants as c
    from trainjob.local.client import sweep_store
    from trainjob.local.client.sweep_store import SweepRow

    uid = str(uuid.uuid4())
    created = times.format(time.time() - 300)
    names = sorted({k for params, _, _ in trials for k in params})
    spec = {
        "objectives": [{"metric": metric, "direction": direction}],
        "searchAlgorithm": algorithm or {"random": {"seed": 7}},
        "parameters": parameters
        or [{"name": n, "searchSpace": {"uniform": {"min": "0", "max": "1"}}} for n in names],
        "numTrials": len(trials),
        "parallelTrials": 1,
        "trainJobTemplate": {"spec": {"runtimeRef": {"name": "torch-distributed"}}},
    }
    job = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "OptimizationJob",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": uid,
            "creationTimestamp": created,
        },
        "spec": spec,
    }
    rows: list[dict[str, Any]] = []
    for i, (params, objective, phase) in enumerate(trials):
        trial = f"{name}-{i}"
        assigned = [{"name": k, "value": v} for k, v in params.items()]
        rows.append(
            {"name": trial, "parameters": assigned, "phase": phase}
            | ({"objective": objective} if objective is not None else {})
            | ({"reason": "the trial's job failed"} if phase == "Failed" else {})
        )
        store_job(
            ex,
            trial,
            namespace,
            phase="Complete" if phase == "Succeeded" else "Failed",
            nodes=1,
            labels={c.LABEL_OPTIMIZATION_JOB: name, c.LABEL_TRIAL_INDEX: str(i)},
            status={"trainerStatus": trainer_status(100, 0, {metric: objective})}
            if objective is not None
            else None,
        )
    scored = [r for r in rows if "objective" in r]
    sign = -1 if direction == "Maximize" else 1
    best = min(scored, key=lambda r: sign * float(r["objective"])) if scored else None
    status: dict[str, Any] = {
        "conditions": [
            {
                "type": "Complete",
                "status": "True",
                "reason": "AllTrialsFinished",
                "message": f"all {len(rows)} trials finished; the best is "
                + (best["name"] if best else "none"),
                "lastTransitionTime": times.now(),
            }
        ],
        "trials": rows,
    }
    if best is not None:
        status["result"] = {"trainJobName": best["name"], "parameters": best["parameters"]}
    sweep_store.insert(
        ex.store,
        SweepRow(
            namespace=namespace,
            name=name,
            uid=uid,
            created=created,
            created_ts=time.time() - 300,
            job=json.dumps(job),
            status=json.dumps(status),
            phase="Complete",
            cwd=str(ex.home),
            events=json.dumps(
                [
                    {
                        "type": "Normal",
                        "reason": "TrialCreated",
                        "message": f"created trial {r['name']}",
                        "timestamp": times.now(),
                        "involvedKind": "OptimizationJob",
                        "involvedName": name,
                    }
                    for r in rows
                ]
            ),
        ),
    )
