"""What the dashboard shows of a sweep (an OptimizationJob), as plain JSON-able dicts.

Pure functions of the :class:`~trainjob.api.optimization.OptimizationJob` a
:class:`~trainjob.executor.sweeps.SweepExecutor` returns (no I/O), so the Jobs page's sweeps and
a sweep's page read the same on every backend, and a unit test pins each without a server. A
trial's objective is sent as the status says it (a string) and as a number (``objectiveValue``,
None when it is not one) for sorting and plotting; the browser formats numbers for people
(``TJ.number`` in ``static/dashboard.js``) and sets every value as text.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from trainjob.api.optimization import OptimizationJob
from trainjob.dashboard.views import event_row
from trainjob.executor import sweeps
from trainjob.executor.model import Event

MINIMIZE = "Minimize"


def number(value: object) -> float | None:
    """``value`` (a reported string) as a finite float, else None."""
    try:
        x = float(str(value))
    except ValueError:
        return None
    return x if math.isfinite(x) else None


def _status(job: OptimizationJob) -> dict[str, Any]:
    return job.status.to_dict() if job.status is not None else {}


def _best_name(status: Mapping[str, Any]) -> str | None:
    name = (status.get("result") or {}).get("trainJobName")
    return str(name) if name else None


def sweep_row(job: OptimizationJob) -> dict[str, Any]:
    """A sweep's row on the Jobs page (what ``trainjob get optimizationjobs -o wide`` prints)."""
    status = _status(job)
    spec = job.spec
    objective = spec.objectives[0]
    trials = status.get("trials") or ()
    best_name = _best_name(status)
    best = next((t for t in trials if t.get("name") == best_name), None)
    conds = status.get("conditions") or ()
    reason = next((k.get("reason") for k in conds if k.get("type") == sweeps.phase(status)), None)
    return {
        "namespace": job.metadata.namespace or "",
        "name": job.metadata.name or "",
        "phase": sweeps.phase(status),
        "reason": reason or "",
        "metric": objective.metric,
        "direction": objective.direction or MINIMIZE,
        "algorithm": sweeps.algorithm(job),
        "trials": len(trials),
        "finished": sum(1 for t in trials if t.get("phase") in sweeps.TRIAL_DONE),
        "numTrials": spec.num_trials or 1,
        "parallelTrials": spec.parallel_trials or 1,
        "best": best_name,
        "bestObjective": (best or {}).get("objective"),
        "created": job.metadata.creation_timestamp,
    }


def _space(space: Mapping[str, Any]) -> dict[str, Any]:
    """A parameter's search space: its kind and what it ranges over."""
    for kind in ("uniform", "logUniform"):
        r = space.get(kind)
        if r is not None:
            return {
                "kind": kind,
                "type": r.get("type") or "Float",
                "min": r.get("min"),
                "max": r.get("max"),
            }
    cat = space.get("categorical") or {}
    return {"kind": "categorical", "choices": list(cat.get("choices") or ())}


def trial_row(trial: Mapping[str, Any], index: int, best: str | None) -> dict[str, Any]:
    return {
        "index": index,
        "name": trial.get("name", ""),
        "phase": trial.get("phase", ""),
        "parameters": {p["name"]: p["value"] for p in trial.get("parameters") or ()},
        "objective": trial.get("objective"),
        "objectiveValue": number(trial.get("objective")),
        "reason": trial.get("reason") or "",
        "best": best is not None and trial.get("name") == best,
    }


def sweep_detail(job: OptimizationJob, events: Iterable[Event]) -> dict[str, Any]:
    """A sweep's page: its row, the search (parameters and their spaces, early stopping), the
    conditions, the result (the best trial's parameters), every trial, the events."""
    status = _status(job)
    spec = job.to_dict().get("spec") or {}
    best = _best_name(status)
    result = status.get("result") or {}
    median = ((spec.get("earlyStopping") or {}).get("median")) if spec else None
    return {
        **sweep_row(job),
        "parameters": [
            {"name": p.get("name", ""), **_space(p.get("searchSpace") or {})}
            for p in spec.get("parameters") or ()
        ],
        "maxFailedTrials": spec.get("maxFailedTrials"),
        "earlyStopping": None
        if median is None
        else {
            "minTrials": median.get("minTrials", 3),
            "startStep": median.get("startStep", 1),
        },
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
        "result": None
        if not best
        else {
            "trainJobName": best,
            "parameters": {p["name"]: p["value"] for p in result.get("parameters") or ()},
        },
        "trialList": [trial_row(t, i, best) for i, t in enumerate(status.get("trials") or ())],
        "events": [event_row(e) for e in events],
    }
