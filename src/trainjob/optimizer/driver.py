"""The sweep loop: one level-triggered pass of an OptimizationJob over any backend's executor.

A pass reads what is (the job's trials: the TrainJobs labelled with its name, their phases,
final objectives from ``status.trainerStatus.metrics`` and, where the backend keeps it, each
one's report history), asks the pure engine what to do (:func:`trainjob.optimizer.engine.
decide`), does it, and writes the job's status through a callback:

1. list the trials (:meth:`Driver.trials`); a trial that completed without reporting the
   objective is read as Katib's stdout collector would, from the last ``metric=VALUE`` line of
   its log (its reports could not reach a status endpoint, or its command only prints);
2. decide;
3. stop the trials the engine stops (early stopping; and every live trial once the job has
   finished): the annotation :data:`~trainjob.api.constants.ANNOTATION_TRIAL_STOPPED` with the
   engine's message first, then ``suspend``; a trial found annotated but not suspended (a
   driver killed between the two) is suspended again;
4. create the trials the engine asks for (:func:`trainjob.optimizer.template.render_trial`):
   a trial's name is ``<job>-<index>``, so an ``AlreadyExists`` is a trial made already (by a
   driver killed before it saw it): no trial is lost or run twice;
5. the status (:func:`trainjob.optimizer.status.status_for`), with each trial's reason: why it
   was stopped, why its TrainJob failed, that it never reported the objective.

Nothing but the executor's objects is kept between passes (a finished trial's history, which
cannot change, is cached), so a driver killed and restarted picks up where it was. Used by the
local backend's sweep supervisor (:mod:`trainjob.local.client.sweep_supervisor`) and the controller's
OptimizationJob reconciler.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from trainjob.api import constants as c
from trainjob.core import times
from trainjob.errors import AlreadyExistsError, ConfigError, InvalidError, NotFoundError
from trainjob.executor import model as st
from trainjob.executor.steps import default_step
from trainjob.optimizer import engine, template
from trainjob.optimizer import status as sweep_status
from trainjob.trainers import stdout_metrics

if TYPE_CHECKING:
    from trainjob.api.optimization import OptimizationJob, OptimizationJobStatus, TrialPhase
    from trainjob.api.trainer import TrainJob
    from trainjob.executor.model import JobState, MetricSample

log = logging.getLogger(__name__)

KATIB_LINE = re.compile(stdout_metrics.PATTERN)

PENDING, RUNNING, SUCCEEDED, FAILED, STOPPED = (
    engine.PENDING, engine.RUNNING, engine.SUCCEEDED, engine.FAILED, engine.STOPPED,
)  # fmt: skip
LIVE = engine.ACTIVE

REASON_METRICS_UNAVAILABLE = "MetricsUnavailable"
REASON_TRIAL_FAILED = "TrialFailed"
REASON_INVALID_TEMPLATE = "InvalidTrialTemplate"
REASON_TRIAL_CREATED = "TrialCreated"
REASON_TRIAL_STOPPED = "TrialStopped"
REASON_CREATE_FAILED = "TrialCreateFailed"


@dataclass(frozen=True)
class Action:
    """Something a pass did, for the backend's events: ``type`` Normal|Warning, a reason, a
    sentence, the trial it is about."""

    type: str
    reason: str
    message: str
    trial: str = ""


@dataclass(frozen=True)
class Pass:
    """What one pass saw, decided and did."""

    trials: tuple[engine.Trial, ...]
    decision: engine.Decision
    status: OptimizationJobStatus
    actions: tuple[Action, ...] = ()

    @property
    def finished(self) -> bool:
        return self.decision.finished


class Trials(Protocol):
    """What a pass needs of where the trials run: the part of
    :class:`~trainjob.executor.base.Executor` it calls (any executor is one; the controller's
    view of its informer cache is another, :mod:`trainjob.controller.optimizationjob`)."""

    @property
    def keeps_metric_history(self) -> bool: ...

    def states(self, namespace: str | None = None, *, pods: bool = True) -> list[JobState]: ...

    def state(self, name: str, namespace: str) -> JobState: ...

    def logs(
        self,
        name: str,
        namespace: str,
        job: str = "node",
        index: int = 0,
        follow: bool = False,
        *,
        job_index: int = 0,
        tail: int | None = None,
        previous: bool = False,
        timestamps: bool = False,
    ) -> Iterator[str]: ...

    def metric_history(
        self, name: str, namespace: str, *, since: int = 0
    ) -> list[MetricSample]: ...

    def submit(self, trainjob: TrainJob, *, cwd: str | None = None) -> TrainJob: ...

    def suspend(self, name: str, namespace: str) -> TrainJob: ...

    def annotate(
        self, name: str, namespace: str, annotations: Mapping[str, str | None]
    ) -> TrainJob: ...


@dataclass
class Driver:
    """The loop's passes over ``executor`` (the TrainJob executor the trials run on)."""

    executor: Trials
    cwd: str | None = None
    """Where a local trial's commands run (the directory the OptimizationJob came from)."""
    _histories: dict[str, tuple[tuple[int, float], ...]] = field(default_factory=dict)
    _seen: dict[str, list[MetricSample]] = field(default_factory=dict)
    _logged_values: dict[str, float | None] = field(default_factory=dict)

    # -- reading --------------------------------------------------------------------------------

    def states(self, job: OptimizationJob) -> list[JobState]:
        """The job's trials' states, by index (TrainJobs labelled with its name and, when the
        job has a uid, owned by it)."""
        name, ns = job.metadata.name or "", job.metadata.namespace or "default"
        uid = job.metadata.uid
        out = []
        for s in self.executor.states(ns, pods=False):
            meta = s.trainjob.get("metadata") or {}
            if (meta.get("labels") or {}).get(c.LABEL_OPTIMIZATION_JOB) != name:
                continue
            owners = meta.get("ownerReferences") or ()
            if uid and owners and not any(o.get("uid") == uid for o in owners):
                continue  # a trial of an earlier job of that name
            out.append(s)
        return sorted(out, key=lambda s: (trial_index(s.trainjob), s.name))

    def trials(
        self, job: OptimizationJob, states: Sequence[JobState] | None = None
    ) -> list[engine.Trial]:
        """The engine's view of the job's trials."""
        metric = job.spec.objectives[0].metric
        with_history = job.spec.early_stopping is not None
        out = []
        for s in self.states(job) if states is None else states:
            objective = objective_of(s, metric)
            if objective is None and s.phase == st.COMPLETE:
                objective = self._logged(s, metric)
            ph = trial_phase(s, metric, objective)
            history: tuple[tuple[int, float], ...] = ()
            if with_history:
                history = self._history(s, ph, metric)
            out.append(
                engine.Trial(
                    name=s.name,
                    index=trial_index(s.trainjob),
                    parameters=trial_parameters(s.trainjob),
                    phase=ph,
                    objective=objective,
                    history=history,
                    reason=trial_reason(s, ph, metric),
                )
            )
        return out

    def _logged(self, s: JobState, metric: str) -> float | None:
        """A completed trial that reported no objective: the last ``metric=VALUE`` line of its
        trainer's log, as Katib's stdout collector reads it (a trial whose reports could not
        reach a status endpoint: a container engine's network; a command that only prints).
        Read once per trial."""
        key = f"log:{s.namespace}/{s.name}/{(s.trainjob.get('metadata') or {}).get('uid', '')}"
        if key not in self._logged_values:
            value = None
            try:
                job, index, job_index = default_step(self.executor.state(s.name, s.namespace))
                for line in self.executor.logs(
                    s.name, s.namespace, job, index, job_index=job_index
                ):
                    for name, text, *_ in KATIB_LINE.findall(line):
                        if name == metric and text not in ("", "+", "-"):
                            value = engine.objective_value(
                                {"metrics": [{"name": metric, "value": text}]}, metric
                            )
            except (NotFoundError, ConfigError, OSError):
                value = None
            self._logged_values[key] = value
        return self._logged_values[key]

    def _history(self, s: JobState, ph: str, metric: str) -> tuple[tuple[int, float], ...]:
        """The trial's intermediate values: the executor's history where it keeps one, else the
        reports this driver saw (a cluster keeps the latest only); a finished trial's once."""
        key = f"{s.namespace}/{s.name}/{(s.trainjob.get('metadata') or {}).get('uid', '')}"
        if key in self._histories:
            return self._histories[key]
        if self.executor.keeps_metric_history:
            samples = self.executor.metric_history(s.name, s.namespace)
        else:
            seen = self._seen.setdefault(key, [])
            latest = s.progress
            if latest is not None and (not seen or seen[-1].time != latest.time):
                seen.append(latest)
            samples = seen
        history = tuple(engine.history_from_samples(samples, metric))
        if ph not in LIVE:
            self._histories[key] = history
            self._seen.pop(key, None)
        return history

    # -- one pass -------------------------------------------------------------------------------

    def sync(
        self,
        job: OptimizationJob,
        write_status: Callable[[OptimizationJobStatus], None],
        now: str | None = None,
    ) -> Pass:
        """One pass (see the module docstring); the status is written through
        ``write_status`` (the caller skips a write that changes nothing)."""
        ns = job.metadata.namespace or "default"
        states = self.states(job)
        trials = self.trials(job, states)
        decision = engine.decide(job.spec, trials)
        actions: list[Action] = []
        by_name = {s.name: s for s in states}
        stops = list(decision.stop)
        if decision.finished:  # nothing more runs once the job has its verdict
            stopping = {n for n, _ in stops}
            verdict = decision.condition[1] if decision.condition else "finished"
            stops += [
                (t.name, f"the OptimizationJob has finished ({verdict})")
                for t in trials
                if t.phase in LIVE and t.name not in stopping
            ]
        for s in states:  # annotated by a pass that was killed before it suspended
            said = stopped_message(s.trainjob)
            if said and not s.finished and not s.spec.get("suspend"):
                stops.append((s.name, said))
        for name, message in stops:
            actions += self._stop(by_name.get(name), name, ns, message)
        problem: tuple[str, str] | None = None
        if not decision.finished:
            for index, parameters in decision.create:
                done, action, problem = self._create(job, index, parameters)
                if action is not None:
                    actions.append(action)
                if not done:
                    break
        out = sweep_status.status_for(job, trials, decision, now or times.now())
        if problem is not None:
            _fail(out, problem, now or times.now())
        write_status(out)
        return Pass(tuple(trials), decision, out, tuple(actions))

    def _stop(self, s: JobState | None, name: str, ns: str, message: str) -> list[Action]:
        if s is not None and s.finished:
            return []  # it ended on its own meanwhile: its result counts
        first = s is None or not stopped_message(s.trainjob)
        try:
            if first:
                self.executor.annotate(name, ns, {c.ANNOTATION_TRIAL_STOPPED: message})
            self.executor.suspend(name, ns)
        except NotFoundError:
            return []
        log.info("stopped trial %s/%s: %s", ns, name, message)
        return (
            [Action("Normal", REASON_TRIAL_STOPPED, f"Stopped trial {name}: {message}", name)]
            if first
            else []
        )

    def _create(
        self, job: OptimizationJob, index: int, parameters: Mapping[str, str]
    ) -> tuple[bool, Action | None, tuple[str, str] | None]:
        """Create trial ``index``: (whether to go on creating, the event, a permanent problem
        that fails the job)."""
        ns = job.metadata.namespace or "default"
        try:
            trial = template.render_trial(job, index, parameters)
        except InvalidError as e:
            return False, None, (REASON_INVALID_TEMPLATE, str(e))
        name = trial.metadata.name or ""
        try:
            self.executor.submit(trial, cwd=self.cwd)
        except AlreadyExistsError:
            return True, None, None  # made by a pass that was killed before it saw it
        except (InvalidError, NotFoundError) as e:
            return False, None, (REASON_INVALID_TEMPLATE, f"trial {name}: {e}")
        except ConfigError as e:  # this machine, now (a busy store, a full disk): next pass
            msg = f"cannot create trial {name} yet: {e}"
            log.warning("%s/%s: %s", ns, job.metadata.name, msg)
            return False, Action("Warning", REASON_CREATE_FAILED, msg, name), None
        said = ", ".join(f"{k}={v}" for k, v in parameters.items())
        log.info("created trial %s/%s (%s)", ns, name, said)
        return (
            True,
            Action("Normal", REASON_TRIAL_CREATED, f"Created trial {name}: {said}", name),
            None,
        )


# -- what a trial's TrainJob says ---------------------------------------------------------------


def trial_index(trainjob: Mapping[str, Any]) -> int:
    """The trial's index (its label; -1 when it has none or a bad one)."""
    raw = ((trainjob.get("metadata") or {}).get("labels") or {}).get(c.LABEL_TRIAL_INDEX)
    try:
        return int(str(raw)) if raw is not None else -1
    except ValueError:
        return -1


def trial_parameters(trainjob: Mapping[str, Any]) -> dict[str, str]:
    """The parameters the trial was made with (its annotation, a JSON object of strings)."""
    raw = ((trainjob.get("metadata") or {}).get("annotations") or {}).get(
        c.ANNOTATION_TRIAL_PARAMETERS
    )
    try:
        found = json.loads(raw) if raw else {}
    except ValueError:
        return {}
    return {str(k): str(v) for k, v in found.items()} if isinstance(found, dict) else {}


def stopped_message(trainjob: Mapping[str, Any]) -> str:
    """Why a sweep stopped the trial (its annotation), empty when it did not."""
    annotations = (trainjob.get("metadata") or {}).get("annotations") or {}
    return str(annotations.get(c.ANNOTATION_TRIAL_STOPPED) or "")


def objective_of(s: JobState, metric: str) -> float | None:
    """The objective metric's latest value (``status.trainerStatus.metrics``)."""
    trainer_status = (s.trainjob.get("status") or {}).get("trainerStatus")
    return engine.objective_value(trainer_status, metric)


def trial_phase(s: JobState, metric: str, objective: float | None = None) -> TrialPhase:
    """The engine's phase of a trial: Stopped once a sweep stopped it (unless it completed
    first), Succeeded once Complete with the objective reported (else Failed: Katib's
    MetricsUnavailable), Failed, Running, else Pending (created, or suspended by hand)."""
    if s.phase == st.COMPLETE:
        found = objective if objective is not None else objective_of(s, metric)
        return SUCCEEDED if found is not None else FAILED
    if stopped_message(s.trainjob):
        return STOPPED
    if s.phase == st.FAILED:
        return FAILED
    if s.phase == st.RUNNING:
        return RUNNING
    return PENDING


def trial_reason(s: JobState, ph: str, metric: str) -> str | None:
    """Why a trial stopped or failed, for its status: the sweep's message (its annotation), the
    objective it never reported, or its TrainJob's Failed reason."""
    if ph == STOPPED:
        return stopped_message(s.trainjob)
    if ph == FAILED and s.phase == st.COMPLETE:
        return (
            f"{REASON_METRICS_UNAVAILABLE}: the trial completed without reporting the objective "
            f"metric {metric!r} (update_trainjob_status, or {metric}=VALUE lines)"
        )
    if ph == FAILED:
        return f"{s.reason}: {s.message}".strip(": ") or REASON_TRIAL_FAILED
    return None


def _fail(out: OptimizationJobStatus, problem: tuple[str, str], now: str) -> None:
    """Mark the job Failed: a trial that can never be created (an invalid template)."""
    from trainjob.api.k8s_types import Condition
    from trainjob.core import conditions

    reason, message = problem
    conds = [x.to_dict() for x in out.conditions or ()]
    conditions.set_condition(conds, "Running", False, reason, message, now=now)
    conditions.set_condition(conds, "Failed", True, reason, message, now=now)
    out.conditions = [Condition.model_validate(x) for x in conds]
