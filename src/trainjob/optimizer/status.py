"""An OptimizationJob's status from its trials and the engine's decision.

Conditions (KEP 2605 section 7.4, with TrainJob's semantics: :func:`trainjob.core.conditions.
set_condition` keeps a condition's ``lastTransitionTime`` until its status flips):

* ``Created=True/TrialsCreated`` once the job is accepted (the first status written);
* ``Running=True/TrialsRunning`` while trials are Pending or Running (trainjob's; the message
  counts them); ``Running=False`` with the final reason once the sweep is over;
* ``Complete=True/AllTrialsFinished`` or ``Failed=True/MaxFailedTrialsExceeded|AllTrialsFailed``
  at the end (the terminal condition is the last one, as ``kubectl get`` shows the last type).

``result`` is the best trial (its TrainJob's name and parameters), there as soon as one trial
completed; ``trials`` (trainjob's) lists every trial by index. Pure: the caller writes the status
(the controller in one status write per reconcile; the local driver to its store).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence

from trainjob.api import constants as c
from trainjob.api.optimization import (
    OptimizationJob,
    OptimizationJobStatus,
    OptimizationResult,
    ParameterAssignment,
    TrialStatus,
)
from trainjob.core import conditions as cond
from trainjob.optimizer.engine import ACTIVE, FINISHED, Decision, Trial, total_trials

__all__ = ["status_for"]


def _assignments(job: OptimizationJob, trial: Trial) -> list[ParameterAssignment]:
    """A trial's values in the spec's parameter order (any others after, by name)."""
    order = [p.name for p in job.spec.parameters]
    names = [n for n in order if n in trial.parameters]
    names += sorted(n for n in trial.parameters if n not in order)
    return [ParameterAssignment(name=n, value=trial.parameters[n]) for n in names]


def _objective(value: float | None) -> str | None:
    return None if value is None else repr(value)


def status_for(
    job: OptimizationJob, trials: Sequence[Trial], decision: Decision, now: str
) -> OptimizationJobStatus:
    """The status to write for ``job`` now (``now``: RFC 3339), from its current status."""
    old = job.status
    conditions: list[cond.Condition] = [
        c_.to_dict() for c_ in (old.conditions if old and old.conditions else ())
    ]
    conditions = copy.deepcopy(conditions)
    cond.set_condition(
        conditions,
        c.CONDITION_CREATED,
        cond.TRUE,
        c.REASON_TRIALS_CREATED,
        c.MESSAGE_TRIALS_CREATED,
        now=now,
    )
    active = sum(t.phase in ACTIVE for t in trials) + len(decision.create)
    done = sum(t.phase in FINISHED for t in trials)
    if decision.finished and decision.condition is not None:
        type_, reason, message = decision.condition
        if cond.find(conditions, c.CONDITION_RUNNING) is not None:
            cond.set_condition(
                conditions, c.CONDITION_RUNNING, cond.FALSE, reason, message, now=now
            )
        cond.set_condition(conditions, type_, cond.TRUE, reason, message, now=now)
    elif active:
        message = c.MESSAGE_TRIALS_RUNNING.format(
            active=active, total=total_trials(job.spec), done=done
        )
        cond.set_condition(
            conditions, c.CONDITION_RUNNING, cond.TRUE, c.REASON_TRIALS_RUNNING, message, now=now
        )
    best = decision.best
    result = (
        OptimizationResult(train_job_name=best.name, parameters=_assignments(job, best))
        if best is not None
        else None
    )
    stopping = dict(decision.stop)
    statuses = [
        TrialStatus(
            name=t.name,
            parameters=_assignments(job, t),
            phase=t.phase,
            objective=_objective(t.objective),
            reason=t.reason or stopping.get(t.name),
        )
        for t in sorted(trials, key=lambda t: t.index)
    ]
    return OptimizationJobStatus.model_validate(
        {
            "conditions": conditions,
            "result": result.to_dict() if result else None,
            "trials": [s.to_dict() for s in statuses],
        }
    )
