"""The sweep engine: given an OptimizationJob's spec and its trials so far, what to do next.

:func:`decide` is pure: no clock, no I/O, no state between calls. Each call builds an in-memory
Optuna study from the trials (``optuna.trial.create_trial`` with the search space as Optuna
distributions), asks the sampler for the new trials' parameters and the pruner for the trials to
stop, and throws the study away. So a backend (the local supervisor, the Kubernetes controller)
can be killed and restarted at any point: the trials it lists are the whole state.

What each algorithm proposes for trial ``n`` (trials are numbered from 0):

* ``random``: Optuna's RandomSampler seeded from ``(seed, n)`` only, so a seeded sweep proposes the
  same trials on every backend and every run (unseeded: fresh randomness).
* ``grid``: the ``n``-th point of the product of the categorical choices, parameters in the
  spec's order and choices in their order (the last parameter varies fastest). The sweep has as
  many trials as the grid has points: ``numTrials`` beyond that is not reached, a smaller one
  stops early. (Optuna's GridSampler picks an unvisited point at random, which would make trial
  ``n``'s point depend on which trials happen to run at once; the product order does not.)
* ``tpe`` (trainjob's): Optuna's TPESampler seeded from ``(seed, n)``, over the finished trials
  (completed ones with their value, stopped ones pruned, failed ones failed). Deterministic given
  the finished trials: with ``parallelTrials: 1`` two runs of a seeded sweep propose the same
  trials; in parallel, which trials have finished when ``n`` is proposed depends on timing. Its
  first trials are random (Optuna's ``n_startup_trials``, 10).

Parameter values are strings, as upstream's ``status.result`` and the SDK's ``Trial.parameters``
hold them: an Int range's as an integer, a Float's with up to 10 significant digits (exactly the
value the trial gets), a choice as written.

Early stopping (trainjob's ``earlyStopping.median``): Optuna's MedianPruner. A running trial whose
best intermediate value so far, at its latest step ``s``, is worse than the median of the
completed trials' values at step ``s`` is stopped, once ``minTrials`` trials completed and when
``s >= startStep``. Steps are what :func:`history_from_samples` makes of a trial's reports.

When the sweep ends (:class:`Decision` ``finished``): Failed once more than ``maxFailedTrials``
trials failed (trainjob's; unset: no limit), else once every trial is made and done: Complete
with the best trial, or Failed when no trial completed with a value of the objective metric. A
trial that succeeded without reporting the metric counts as failed. ``parallelTrials`` bounds the
trials Pending or Running; no index is proposed twice.
"""

from __future__ import annotations

import hashlib
import itertools
import math
import statistics
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, TypeAlias

from trainjob.api import constants as c
from trainjob.api.optimization import MAXIMIZE, OptimizationJobSpec, Parameter, TrialPhase
from trainjob.api.trainer import TrainerStatus
from trainjob.executor.model import MetricSample

__all__ = [
    "ACTIVE",
    "FINISHED",
    "Decision",
    "Trial",
    "decide",
    "grid_points",
    "history_from_samples",
    "objective_value",
    "total_trials",
]

PENDING: TrialPhase = "Pending"
RUNNING: TrialPhase = "Running"
SUCCEEDED: TrialPhase = "Succeeded"
FAILED: TrialPhase = "Failed"
STOPPED: TrialPhase = "Stopped"
ACTIVE: frozenset[str] = frozenset({PENDING, RUNNING})
FINISHED: frozenset[str] = frozenset({SUCCEEDED, FAILED, STOPPED})

_EMPTY: Mapping[str, str] = MappingProxyType({})

# A TrainJob's status.trainerStatus: the model, or the dict of a TrainJob read from an API.
TrainerStatusLike: TypeAlias = TrainerStatus | Mapping[str, Any]


@dataclass(frozen=True)
class Trial:
    """One trial as the engine sees it: a TrainJob of the sweep, reduced to what decides.

    ``objective``: the final value of the first objective's metric (None until it reported one);
    ``history``: its intermediate ``(step, value)`` reports, in step order; ``reason``: why it
    failed or was stopped, for the status (the engine does not read it)."""

    name: str
    index: int
    parameters: Mapping[str, str] = field(default_factory=lambda: _EMPTY)
    phase: TrialPhase = PENDING
    objective: float | None = None
    history: tuple[tuple[int, float], ...] = ()
    reason: str | None = None


@dataclass(frozen=True)
class Decision:
    """What to do now: trials to create (index, parameters), trials to stop (name, message),
    whether the sweep is over and with which condition ``(type, reason, message)``, and the best
    trial so far (known as soon as one completed). A trial asked to stop is named again by the
    next decisions until it is listed as Stopped: stopping must be idempotent."""

    create: tuple[tuple[int, Mapping[str, str]], ...] = ()
    stop: tuple[tuple[str, str], ...] = ()
    finished: bool = False
    condition: tuple[str, str, str] | None = None
    best: Trial | None = None


# --- reading trials -------------------------------------------------------------------------------


def _number(text: object) -> float | None:
    try:
        value = float(str(text))
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def objective_value(trainer_status: TrainerStatusLike | None, metric: str) -> float | None:
    """The value of ``metric`` in a TrainJob's ``status.trainerStatus`` (a model or its dict),
    as a float; None when absent or not a finite number. The last entry wins if it is twice."""
    if trainer_status is None:
        return None
    if isinstance(trainer_status, Mapping):
        metrics = [
            (m.get("name"), m.get("value"))
            for m in trainer_status.get("metrics") or ()
            if isinstance(m, Mapping)
        ]
    else:
        metrics = [(m.name, m.value) for m in trainer_status.metrics or ()]
    found = [value for name, value in metrics if name == metric]
    return _number(found[-1]) if found else None


def history_from_samples(
    samples: Iterable[MetricSample], metric: str
) -> tuple[tuple[int, float], ...]:
    """A trial's intermediate values of ``metric`` from its progress reports (the local store's
    metric history, :class:`trainjob.executor.model.MetricSample`), as ``(step, value)``.

    A report's step is its ``step`` metric when it reports one (an integer), else its
    ``progressPercentage`` when it has one, else its ordinal among the reports of ``metric``
    (1, 2, ...). Reports without a numeric ``metric`` are skipped; for a step reported twice the
    later value wins. Sorted by step."""
    by_step: dict[int, float] = {}
    ordinal = 0
    for sample in samples:
        value = sample.number(metric)
        if value is None:
            continue
        ordinal += 1
        step_metric = sample.number("step")
        if step_metric is not None and step_metric.is_integer():
            step = int(step_metric)
        elif sample.progress_percentage is not None:
            step = sample.progress_percentage
        else:
            step = ordinal
        by_step[step] = value
    return tuple(sorted(by_step.items()))


# --- the search space -------------------------------------------------------------------------


def grid_points(parameters: Sequence[Parameter]) -> list[dict[str, str]]:
    """Every point of the grid, in the order trials get them (see the module docstring)."""
    names = [p.name for p in parameters]
    choices = [
        p.search_space.categorical.choices if p.search_space.categorical else [] for p in parameters
    ]
    return [dict(zip(names, point, strict=True)) for point in itertools.product(*choices)]


def total_trials(spec: OptimizationJobSpec) -> int:
    """How many trials the sweep makes: ``numTrials``, or the grid's size if smaller."""
    total = spec.num_trials or 1
    algo = spec.search_algorithm
    if algo is not None and algo.grid is not None:
        total = min(total, len(grid_points(spec.parameters)))
    return total


def _optuna() -> Any:
    """Optuna, imported on first use and kept quiet (no INFO line per trial on stderr)."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    return optuna


def _distributions(parameters: Sequence[Parameter]) -> dict[str, Any]:
    dist = _optuna().distributions
    out: dict[str, Any] = {}
    for p in parameters:
        space = p.search_space
        rng = space.uniform or space.log_uniform
        if rng is not None:
            log = space.log_uniform is not None
            low, high = float(rng.min), float(rng.max)
            if rng.type == "Int":
                out[p.name] = dist.IntDistribution(int(low), int(high), log=log)
            else:
                out[p.name] = dist.FloatDistribution(low, high, log=log)
        elif space.categorical is not None:
            out[p.name] = dist.CategoricalDistribution(list(space.categorical.choices))
    return out


def _external(value: str, distribution: Any) -> Any:
    """A trial's parameter string as Optuna's value (raises ValueError if it does not fit)."""
    dist = _optuna().distributions
    if isinstance(distribution, dist.CategoricalDistribution):
        if value not in distribution.choices:
            raise ValueError(value)
        return value
    number = float(value)
    if isinstance(distribution, dist.IntDistribution):
        if not number.is_integer():
            raise ValueError(value)
        number = int(number)
    if not distribution.low <= number <= distribution.high:
        raise ValueError(value)
    return number


def _text(value: Any, distribution: Any) -> str:
    """Optuna's value as the string a trial gets (exactly the value it stands for)."""
    dist = _optuna().distributions
    if isinstance(distribution, dist.CategoricalDistribution):
        return str(value)
    if isinstance(distribution, dist.IntDistribution):
        return str(int(value))
    text = f"{float(value):.10g}"
    if not distribution.low <= float(text) <= distribution.high:
        text = repr(float(value))  # rounding crossed a bound
    return text


def _seed(seed: int | None, index: int) -> int | None:
    """The sampler's seed for trial ``index``: a function of (seed, index) only."""
    if seed is None:
        return None
    digest = hashlib.sha256(f"{seed}:{index}".encode()).digest()
    return int.from_bytes(digest[:4], "big")


# --- the study ----------------------------------------------------------------------------------


def _study(spec: OptimizationJobSpec, trials: Iterable[Trial], sampler: Any = None) -> Any:
    """An in-memory study holding ``trials`` (those whose parameters fit the search space)."""
    optuna = _optuna()
    state = optuna.trial.TrialState
    direction = (spec.objectives[0].direction or "Minimize").lower()
    study = optuna.create_study(direction=direction, sampler=sampler)
    distributions = _distributions(spec.parameters)
    for t in trials:
        try:
            params = {n: _external(t.parameters[n], d) for n, d in distributions.items()}
        except (KeyError, ValueError):
            continue  # not a trial of this search space (written by hand): nothing to learn
        frozen = dict(
            params=params,
            distributions=distributions,
            intermediate_values=dict(t.history),
        )
        if _completed(t):
            study.add_trial(
                optuna.trial.create_trial(state=state.COMPLETE, value=t.objective, **frozen)
            )
        elif t.phase == STOPPED:
            study.add_trial(optuna.trial.create_trial(state=state.PRUNED, **frozen))
        elif t.phase in FINISHED:
            study.add_trial(optuna.trial.create_trial(state=state.FAIL, **frozen))
    return study


def _completed(t: Trial) -> bool:
    return t.phase == SUCCEEDED and t.objective is not None


def _failed(t: Trial) -> bool:
    """Failed, or succeeded without a value of the objective metric (the sweep cannot use it)."""
    return t.phase == FAILED or (t.phase == SUCCEEDED and t.objective is None)


def _suggest(spec: OptimizationJobSpec, trials: Sequence[Trial], index: int) -> dict[str, str]:
    """Trial ``index``'s parameters."""
    algo = spec.search_algorithm
    if algo is not None and algo.grid is not None:
        return grid_points(spec.parameters)[index]
    optuna = _optuna()
    distributions = _distributions(spec.parameters)
    if algo is not None and algo.tpe is not None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            sampler = optuna.samplers.TPESampler(seed=_seed(algo.tpe.seed, index))
        study = _study(spec, trials, sampler)
    else:
        seed = algo.random.seed if algo is not None and algo.random is not None else None
        study = _study(spec, (), optuna.samplers.RandomSampler(seed=_seed(seed, index)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        asked = study.ask(fixed_distributions=distributions)
    return {n: _text(asked.params[n], d) for n, d in distributions.items()}


def _best(spec: OptimizationJobSpec, trials: Iterable[Trial]) -> Trial | None:
    maximize = spec.objectives[0].direction == MAXIMIZE
    done = [t for t in trials if _completed(t)]
    if not done:
        return None

    def key(t: Trial) -> tuple[float, int]:
        value = t.objective if t.objective is not None else math.nan
        return (-value if maximize else value, t.index)

    return min(done, key=key)


def _to_stop(spec: OptimizationJobSpec, trials: Sequence[Trial]) -> list[tuple[str, str]]:
    """The running trials the median rule stops, each with the sentence saying why."""
    median = spec.early_stopping.median if spec.early_stopping else None
    if median is None:
        return []
    running = [t for t in trials if t.phase == RUNNING and t.history]
    if not running:
        return []
    optuna = _optuna()
    min_trials = 3 if median.min_trials is None else median.min_trials
    start_step = 1 if median.start_step is None else median.start_step
    pruner = optuna.pruners.MedianPruner(n_startup_trials=min_trials, n_warmup_steps=start_step)
    completed = [t for t in trials if _completed(t)]
    # The pruner reads the completed trials' values step by step, not their parameters.
    direction = (spec.objectives[0].direction or "Minimize").lower()
    study = optuna.create_study(direction=direction)
    for t in completed:
        study.add_trial(
            optuna.trial.create_trial(
                state=optuna.trial.TrialState.COMPLETE,
                value=t.objective,
                intermediate_values=dict(t.history),
            )
        )
    metric = spec.objectives[0].metric
    maximize = spec.objectives[0].direction == MAXIMIZE
    out = []
    for t in running:
        # The pruner reads only the trial's intermediate values, not its parameters.
        frozen = optuna.trial.create_trial(
            state=optuna.trial.TrialState.RUNNING, intermediate_values=dict(t.history)
        )
        if not pruner.prune(study, frozen):
            continue
        step = t.history[-1][0]
        values = [v for s, v in (h for c_ in completed for h in c_.history) if s == step]
        best = (max if maximize else min)(v for _, v in t.history)
        mid = statistics.median(values) if values else math.nan
        out.append(
            (
                t.name,
                f"stopped early: its best {metric} by step {step} ({best:g}) is worse than the "
                f"median of the {len(values)} completed trials at step {step} ({mid:g})",
            )
        )
    return out


def decide(spec: OptimizationJobSpec, trials: Sequence[Trial]) -> Decision:
    """What to do next for a sweep of ``spec`` whose trials so far are ``trials``."""
    trials = sorted(trials, key=lambda t: t.index)
    total = total_trials(spec)
    best = _best(spec, trials)
    failed = [t for t in trials if _failed(t)]
    active = [t for t in trials if t.phase in ACTIVE]
    limit = spec.max_failed_trials
    if limit is not None and len(failed) > limit:
        message = c.MESSAGE_MAX_FAILED_TRIALS_EXCEEDED.format(failed=len(failed), limit=limit)
        return Decision(
            stop=tuple((t.name, f"the OptimizationJob failed: {message}") for t in active),
            finished=True,
            condition=(c.CONDITION_FAILED, c.REASON_MAX_FAILED_TRIALS_EXCEEDED, message),
            best=best,
        )
    made = {t.index for t in trials}
    if len(made) >= total and not active:
        done = len(trials)
        if best is None:
            metric = spec.objectives[0].metric
            message = c.MESSAGE_ALL_TRIALS_FAILED.format(done=done, metric=metric)
            return Decision(
                finished=True,
                condition=(c.CONDITION_FAILED, c.REASON_ALL_TRIALS_FAILED, message),
            )
        message = c.MESSAGE_ALL_TRIALS_FINISHED.format(done=done, best=best.name)
        return Decision(
            finished=True,
            condition=(c.CONDITION_COMPLETE, c.REASON_ALL_TRIALS_FINISHED, message),
            best=best,
        )
    stop = _to_stop(spec, trials)
    slots = (spec.parallel_trials or 1) - len(active)
    free = (i for i in itertools.count() if i not in made)
    new = [next(free) for _ in range(max(0, min(slots, total - len(made))))]
    create = tuple((i, MappingProxyType(_suggest(spec, trials, i))) for i in new)
    return Decision(create=create, stop=tuple(stop), best=best)
