"""The sweep engine: what each algorithm proposes, the parallel bound, median stopping, the end.

Test design notes: a sweep is simulated by :func:`run_sweep`, which plays a backend (create what
the engine asks for, finish the running trials with a made-up objective, ask again) until the
engine says it is over; the objective is a fixed function of the parameters, so a seeded sweep
must give the same trials every time.
"""

from __future__ import annotations

import itertools
import logging
import math
import warnings
from collections.abc import Callable, Mapping
from typing import Any

import pytest

from trainjob.api.optimization import OptimizationJob
from trainjob.api.trainer import Metric, TrainerStatus
from trainjob.executor.model import MetricSample
from trainjob.optimizer import engine
from trainjob.optimizer.engine import Decision, Trial, decide, history_from_samples, objective_value

from .builders import LR, OPT, UNITS, sweep, trial

Objective = Callable[[Mapping[str, str]], float]


def loss(params: Mapping[str, str]) -> float:
    """Best at lr = 0.01, opt = adam, units = 128."""
    value = (math.log10(float(params.get("lr", "0.01"))) + 2) ** 2
    value += {"sgd": 1.0, "adam": 0.0, "lamb": 0.5}.get(params.get("opt", "adam"), 0.0)
    return value + abs(int(params.get("units", "128")) - 128) / 128


def run_sweep(job: OptimizationJob, objective: Objective = loss) -> tuple[list[Trial], Decision]:
    trials: list[Trial] = []
    for _ in range(500):
        decision = decide(job.spec, trials)
        if decision.finished:
            return trials, decision
        assert decision.create, "an unfinished sweep with nothing running must create a trial"
        trials += [
            Trial(name=f"sweep-{i}", index=i, parameters=dict(p), phase="Running")
            for i, p in decision.create
        ]
        trials = [
            Trial(t.name, t.index, t.parameters, "Succeeded", objective=objective(t.parameters))
            if t.phase == "Running"
            else t
            for t in trials
        ]
    raise AssertionError("the sweep never ended")


def params_of(trials: list[Trial]) -> list[dict[str, str]]:
    return [dict(t.parameters) for t in trials]


# --- grid ---------------------------------------------------------------------------------------

BS = {"name": "bs", "searchSpace": {"categorical": {"choices": ["16", "32"]}}}
GRID: dict[str, Any] = {"grid": {}}


def test_grid_covers_exactly_the_product_of_the_choices_in_order() -> None:
    job = sweep(OPT, BS, algorithm=GRID, numTrials=100, parallelTrials=4)
    trials, decision = run_sweep(job)
    want = [
        {"opt": o, "bs": b} for o, b in itertools.product(["sgd", "adam", "lamb"], ["16", "32"])
    ]
    assert params_of(trials) == want
    assert [t.index for t in trials] == list(range(6))
    assert decision.condition is not None and decision.condition[1] == "AllTrialsFinished"


def test_a_grid_larger_than_num_trials_runs_its_first_points() -> None:
    job = sweep(OPT, BS, algorithm=GRID, numTrials=3)
    trials, _ = run_sweep(job)
    assert params_of(trials) == [
        {"opt": "sgd", "bs": "16"},
        {"opt": "sgd", "bs": "32"},
        {"opt": "adam", "bs": "16"},
    ]
    assert engine.total_trials(job.spec) == 3
    assert engine.total_trials(sweep(OPT, BS, algorithm=GRID, numTrials=50).spec) == 6


# --- random -------------------------------------------------------------------------------------


def test_seeded_random_proposes_the_same_trials_twice() -> None:
    job = sweep(LR, UNITS, OPT, algorithm={"random": {"seed": 7}}, numTrials=12, parallelTrials=3)
    first, _ = run_sweep(job)
    second, _ = run_sweep(job)
    assert params_of(first) == params_of(second)
    assert len({tuple(p.items()) for p in params_of(first)}) == 12
    other, _ = run_sweep(sweep(LR, UNITS, OPT, algorithm={"random": {"seed": 8}}, numTrials=12))
    assert params_of(other) != params_of(first)


def test_random_trial_n_depends_only_on_the_seed_and_n() -> None:
    job = sweep(LR, OPT, algorithm={"random": {"seed": 1}}, numTrials=10, parallelTrials=2)
    alone = decide(job.spec, [trial(0, "Failed"), trial(1, "Failed")]).create
    others = [trial(0, "Succeeded", 0.1, lr="0.05"), trial(1, "Running", lr="0.0002")]
    beside = decide(job.spec, others).create
    assert [i for i, _ in alone] == [2, 3]
    assert [i for i, _ in beside] == [2]
    assert alone[0] == beside[0]


def test_random_values_are_in_range_and_typed_as_strings() -> None:
    job = sweep(LR, UNITS, OPT, algorithm={"random": {"seed": 3}}, numTrials=60, parallelTrials=60)
    created = decide(job.spec, []).create
    assert len(created) == 60
    lrs = [float(p["lr"]) for _, p in created]
    units = [p["units"] for _, p in created]
    assert all(1e-4 <= v <= 0.1 for v in lrs)
    assert all(u.isdigit() and 16 <= int(u) <= 256 for u in units)
    assert {p["opt"] for _, p in created} == {"sgd", "adam", "lamb"}
    # log-uniform: about a third of the values in each decade
    assert sum(v < 1e-3 for v in lrs) >= 10 and sum(v > 1e-2 for v in lrs) >= 10


def test_unseeded_random_still_proposes_valid_trials() -> None:
    job = sweep(LR, OPT, numTrials=3, parallelTrials=3)
    created = decide(job.spec, []).create
    assert [i for i, _ in created] == [0, 1, 2]
    assert all(1e-4 <= float(p["lr"]) <= 0.1 for _, p in created)


# --- TPE ----------------------------------------------------------------------------------------


def test_seeded_tpe_proposes_the_same_trials_twice() -> None:
    job = sweep(LR, UNITS, OPT, algorithm={"tpe": {"seed": 5}}, numTrials=16)
    first, _ = run_sweep(job)
    second, _ = run_sweep(job)
    assert params_of(first) == params_of(second)


def test_tpe_learns_from_finished_trials_and_beats_random_search() -> None:
    tpe, tpe_done = run_sweep(sweep(LR, UNITS, OPT, algorithm={"tpe": {"seed": 0}}, numTrials=30))
    rnd, rnd_done = run_sweep(
        sweep(LR, UNITS, OPT, algorithm={"random": {"seed": 0}}, numTrials=30)
    )
    late_tpe = sorted(loss(t.parameters) for t in tpe[15:])
    late_rnd = sorted(loss(t.parameters) for t in rnd[15:])
    assert late_tpe[len(late_tpe) // 2] < late_rnd[len(late_rnd) // 2]
    assert tpe_done.best is not None and rnd_done.best is not None


# --- parallelism, indices, the end ----------------------------------------------------------------


def test_parallel_trials_bounds_the_pending_and_running_trials() -> None:
    job = sweep(numTrials=10, parallelTrials=3)
    assert [i for i, _ in decide(job.spec, []).create] == [0, 1, 2]
    busy = [trial(0, "Pending"), trial(1, "Running"), trial(2, "Succeeded", 1.0)]
    assert [i for i, _ in decide(job.spec, busy).create] == [3]
    full = [trial(0, "Pending"), trial(1, "Running"), trial(2, "Running")]
    assert decide(job.spec, full).create == ()


def test_no_index_is_proposed_twice_and_gaps_are_filled_first() -> None:
    job = sweep(numTrials=6, parallelTrials=3)
    made = [trial(0, "Succeeded", 1.0), trial(2, "Failed"), trial(3, "Running")]
    assert [i for i, _ in decide(job.spec, made).create] == [1, 4]


def test_num_trials_bounds_the_trials_made() -> None:
    job = sweep(numTrials=3, parallelTrials=3)
    made = [trial(0, "Succeeded", 1.0), trial(1, "Running"), trial(2, "Running")]
    decision = decide(job.spec, made)
    assert decision.create == () and not decision.finished


@pytest.mark.parametrize(("direction", "want"), [("Minimize", "sweep-1"), ("Maximize", "sweep-2")])
def test_the_best_trial_follows_the_direction(direction: str, want: str) -> None:
    job = sweep(direction=direction, numTrials=5)
    trials = [trial(0, "Succeeded", 0.5), trial(1, "Succeeded", 0.2), trial(2, "Succeeded", 0.9)]
    trials += [trial(3, "Failed"), trial(4, "Running")]
    best = decide(job.spec, trials).best
    assert best is not None and best.name == want


def test_the_best_trial_is_known_as_soon_as_one_completes_and_ties_go_to_the_first() -> None:
    job = sweep(numTrials=5, parallelTrials=2)
    assert decide(job.spec, [trial(0, "Running")]).best is None
    first = decide(job.spec, [trial(0, "Succeeded", 0.3), trial(1, "Running")])
    assert first.best is not None and first.best.index == 0
    tie = decide(job.spec, [trial(0, "Succeeded", 0.3), trial(1, "Succeeded", 0.3)])
    assert tie.best is not None and tie.best.index == 0


def test_a_sweep_whose_trials_all_finished_is_complete_with_its_best() -> None:
    job = sweep(numTrials=2)
    decision = decide(job.spec, [trial(0, "Succeeded", 0.3), trial(1, "Failed")])
    assert decision.finished
    assert decision.condition == (
        "Complete",
        "AllTrialsFinished",
        "all 2 trials finished; the best is sweep-0",
    )
    assert decision.best is not None and decision.best.name == "sweep-0"


def test_a_sweep_without_a_completed_trial_fails() -> None:
    job = sweep(numTrials=2)
    no_metric = trial(1, "Succeeded", None)  # succeeded without reporting loss
    decision = decide(job.spec, [trial(0, "Failed"), no_metric])
    assert decision.finished and decision.best is None
    assert decision.condition == (
        "Failed",
        "AllTrialsFailed",
        "all 2 trials failed or were stopped; none reported loss",
    )


def test_without_max_failed_trials_failures_do_not_end_the_sweep() -> None:
    job = sweep(numTrials=4, parallelTrials=1)
    decision = decide(job.spec, [trial(0, "Failed"), trial(1, "Failed"), trial(2, "Failed")])
    assert not decision.finished
    assert [i for i, _ in decision.create] == [3]


def test_more_failures_than_max_failed_trials_fail_the_sweep_and_stop_the_rest() -> None:
    job = sweep(numTrials=10, parallelTrials=3, maxFailedTrials=1)
    one = decide(job.spec, [trial(0, "Failed"), trial(1, "Running"), trial(2, "Succeeded", 1.0)])
    assert not one.finished
    trials = [trial(0, "Failed"), trial(1, "Running"), trial(2, "Succeeded", 0.5)]
    trials += [trial(3, "Succeeded", None), trial(4, "Pending")]
    decision = decide(job.spec, trials)
    assert decision.finished and decision.create == ()
    message = "2 trials failed, more than maxFailedTrials (1)"
    assert decision.condition == ("Failed", "MaxFailedTrialsExceeded", message)
    assert decision.stop == (
        ("sweep-1", f"the OptimizationJob failed: {message}"),
        ("sweep-4", f"the OptimizationJob failed: {message}"),
    )
    assert decision.best is not None and decision.best.name == "sweep-2"
    zero = sweep(numTrials=10, maxFailedTrials=0)
    assert decide(zero.spec, [trial(0, "Failed")]).finished


def test_stopped_trials_are_not_failures() -> None:
    job = sweep(numTrials=3, maxFailedTrials=0)
    trials = [trial(0, "Succeeded", 0.1), trial(1, "Stopped"), trial(2, "Stopped")]
    decision = decide(job.spec, trials)
    assert decision.condition is not None and decision.condition[0] == "Complete"


# --- median stopping ----------------------------------------------------------------------------

CURVES = {  # step -> loss, for three completed trials: medians 1.0, 0.6, 0.4 at steps 1..3
    0: ((1, 0.9), (2, 0.5), (3, 0.3)),
    1: ((1, 1.0), (2, 0.6), (3, 0.4)),
    2: ((1, 1.2), (2, 0.8), (3, 0.6)),
}


def completed_trials() -> list[Trial]:
    return [trial(i, "Succeeded", h[-1][1], history=h) for i, h in CURVES.items()]


def median_job(**median: int) -> OptimizationJob:
    return sweep(numTrials=10, parallelTrials=3, earlyStopping={"median": median})


def test_median_stopping_stops_a_bad_trial_and_not_a_good_one() -> None:
    bad = trial(3, history=((1, 1.5), (2, 1.1)))
    good = trial(4, history=((1, 0.95), (2, 0.55)))
    decision = decide(median_job().spec, [*completed_trials(), bad, good])
    assert decision.stop == (
        (
            "sweep-3",
            "stopped early: its best loss by step 2 (1.1) is worse than the median of the 3 "
            "completed trials at step 2 (0.6)",
        ),
    )
    assert [i for i, _ in decision.create] == [5]  # the stopped one still holds its slot


def test_median_stopping_looks_at_the_best_value_so_far() -> None:
    recovering = trial(3, history=((1, 0.5), (2, 0.7)))  # worse now, but was better than 0.6
    assert decide(median_job().spec, [*completed_trials(), recovering]).stop == ()


def test_median_stopping_maximizes_too() -> None:
    job = sweep(direction="Maximize", numTrials=10, parallelTrials=3, earlyStopping={"median": {}})
    done = [trial(i, "Succeeded", h[-1][1], history=h) for i, h in CURVES.items()]
    low = trial(3, history=((1, 0.2),))
    high = trial(4, history=((1, 1.1),))
    assert [name for name, _ in decide(job.spec, [*done, low, high]).stop] == ["sweep-3"]


def test_median_stopping_waits_for_min_trials_completed_trials() -> None:
    bad = trial(3, history=((1, 5.0),))
    assert decide(median_job(minTrials=4).spec, [*completed_trials(), bad]).stop == ()
    assert decide(median_job(minTrials=3).spec, [*completed_trials(), bad]).stop != ()


def test_median_stopping_waits_for_the_start_step() -> None:
    bad = trial(3, history=((1, 5.0),))
    assert decide(median_job(startStep=2).spec, [*completed_trials(), bad]).stop == ()
    worse_later = trial(3, history=((1, 5.0), (2, 5.0)))
    assert decide(median_job(startStep=2).spec, [*completed_trials(), worse_later]).stop != ()


def test_without_early_stopping_no_trial_is_stopped() -> None:
    job = sweep(numTrials=10, parallelTrials=3)
    bad = trial(3, history=((1, 50.0),))
    assert decide(job.spec, [*completed_trials(), bad]).stop == ()


def test_a_step_the_completed_trials_never_reported_stops_nothing() -> None:
    odd = trial(3, history=((7, 50.0),))
    assert decide(median_job().spec, [*completed_trials(), odd]).stop == ()


# --- reading a trial ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "want"),
    [
        pytest.param({"metrics": [{"name": "loss", "value": "0.25"}]}, 0.25, id="a dict"),
        pytest.param(
            TrainerStatus(metrics=[Metric(name="loss", value="1e-3")], last_updated_time="t"),
            0.001,
            id="the model",
        ),
        pytest.param({"metrics": [{"name": "loss", "value": "n/a"}]}, None, id="not a number"),
        pytest.param({"metrics": [{"name": "loss", "value": "nan"}]}, None, id="nan"),
        pytest.param({"metrics": [{"name": "acc", "value": "0.9"}]}, None, id="another metric"),
        pytest.param(
            {"metrics": [{"name": "loss", "value": "2"}, {"name": "loss", "value": "1"}]},
            1.0,
            id="the last entry",
        ),
        pytest.param({}, None, id="no metrics"),
        pytest.param(None, None, id="no trainerStatus"),
    ],
)
def test_objective_value(status: Any, want: float | None) -> None:
    assert objective_value(status, "loss") == want


def sample(progress: int | None = None, **metrics: str) -> MetricSample:
    return MetricSample(time="2026-01-01T00:00:00Z", metrics=metrics, progress_percentage=progress)


def test_history_steps_are_the_step_metric_else_progress_else_the_ordinal() -> None:
    with_step = [sample(10, loss="0.9", step="100"), sample(20, loss="0.8", step="200")]
    assert history_from_samples(with_step, "loss") == ((100, 0.9), (200, 0.8))
    with_progress = [sample(10, loss="0.9"), sample(50, loss="0.7")]
    assert history_from_samples(with_progress, "loss") == ((10, 0.9), (50, 0.7))
    bare = [sample(loss="0.9"), sample(acc="0.1"), sample(loss="x"), sample(loss="0.6")]
    assert history_from_samples(bare, "loss") == ((1, 0.9), (2, 0.6))
    again = [sample(10, loss="0.9"), sample(10, loss="0.5")]
    assert history_from_samples(again, "loss") == ((10, 0.5),)


# --- quiet ----------------------------------------------------------------------------------------


def test_the_engine_writes_nothing_to_stderr_or_the_log(
    capfd: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        run_sweep(sweep(LR, OPT, algorithm={"tpe": {"seed": 1}}, numTrials=4))
        decide(median_job().spec, [*completed_trials(), trial(3, history=((1, 9.0),))])
    out, err = capfd.readouterr()
    assert (out, err) == ("", "")
    assert [r for r in caplog.records if r.name.startswith("optuna")] == []


def test_optuna_is_imported_only_when_the_engine_is_asked() -> None:
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from trainjob.api import optimization, load\n"
        "from trainjob.optimizer import engine, status, template\n"
        "assert 'optuna' not in sys.modules, 'imported'\n"
        "from tests.unit.optimizer.builders import sweep\n"
        "engine.decide(sweep().spec, [])\n"
        "assert 'optuna' in sys.modules\n"
    )
    ran = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0, ran.stderr


def test_median_stopping_counts_completed_trials_whose_parameters_are_unknown() -> None:
    # A trial whose parameters annotation was lost still completed: its curve is the median's.
    lost = [Trial(f"sweep-{i}", i, {}, "Succeeded", h[-1][1], h) for i, h in CURVES.items()]
    bad = trial(3, history=((1, 1.5),))
    assert [name for name, _ in decide(median_job().spec, [*lost, bad]).stop] == ["sweep-3"]
