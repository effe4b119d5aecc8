"""An OptimizationJob's status: conditions through a sweep's life, the result, the trials."""

from __future__ import annotations

from trainjob.api.base import to_dict
from trainjob.core import conditions as cond
from trainjob.optimizer.engine import decide
from trainjob.optimizer.status import status_for

from .builders import sweep, trial

T0, T1, T2 = "2026-01-01T00:00:00Z", "2026-01-01T00:01:00Z", "2026-01-01T00:02:00Z"


def conditions(status: object) -> list[tuple[str, str, str, str]]:
    out = to_dict(status)  # type: ignore[arg-type]
    return [
        (c["type"], c["status"], c["reason"], c["lastTransitionTime"])
        for c in out.get("conditions", [])
    ]


def test_a_new_job_is_created_and_running_once_trials_are_asked_for() -> None:
    job = sweep(numTrials=4, parallelTrials=2)
    decision = decide(job.spec, [])
    status = status_for(job, [], decision, T0)
    assert conditions(status) == [
        ("Created", "True", "TrialsCreated", T0),
        ("Running", "True", "TrialsRunning", T0),
    ]
    running = cond.find(to_dict(status)["conditions"], "Running")
    assert running["message"] == "2 of 4 trials running, 0 finished"
    assert status.result is None and status.trials == []


def test_conditions_keep_their_transition_time_and_end_with_the_terminal_one() -> None:
    job = sweep(numTrials=2, parallelTrials=2)
    trials = [trial(0), trial(1)]
    job.status = status_for(job, trials, decide(job.spec, trials), T0)
    trials = [trial(0, "Succeeded", 0.4), trial(1)]
    job.status = status_for(job, trials, decide(job.spec, trials), T1)
    assert conditions(job.status) == [
        ("Created", "True", "TrialsCreated", T0),
        ("Running", "True", "TrialsRunning", T0),
    ]
    trials = [trial(0, "Succeeded", 0.4), trial(1, "Failed")]
    decision = decide(job.spec, trials)
    job.status = status_for(job, trials, decision, T2)
    assert conditions(job.status) == [
        ("Created", "True", "TrialsCreated", T0),
        ("Running", "False", "AllTrialsFinished", T2),
        ("Complete", "True", "AllTrialsFinished", T2),
    ]
    complete = cond.find(to_dict(job.status)["conditions"], "Complete")
    assert complete["message"] == "all 2 trials finished; the best is sweep-0"
    # Written again with nothing new: the same status.
    assert status_for(job, trials, decision, "2026-01-02T00:00:00Z") == job.status


def test_a_failed_sweep_says_why() -> None:
    job = sweep(numTrials=3, maxFailedTrials=0)
    trials = [trial(0, "Failed")]
    status = status_for(job, trials, decide(job.spec, trials), T0)
    assert conditions(status)[-1] == ("Failed", "True", "MaxFailedTrialsExceeded", T0)


def test_the_result_is_the_best_trial_with_its_parameters_in_the_specs_order() -> None:
    job = sweep(numTrials=3, parallelTrials=3)
    trials = [
        trial(0, "Succeeded", 0.4, opt="sgd", lr="0.01"),
        trial(1, "Succeeded", 0.1, opt="adam", lr="0.002"),
        trial(2),
    ]
    status = to_dict(status_for(job, trials, decide(job.spec, trials), T0))
    assert status["result"] == {
        "trainJobName": "sweep-1",
        "parameters": [{"name": "lr", "value": "0.002"}, {"name": "opt", "value": "adam"}],
    }


def test_trials_are_listed_by_index_with_phase_objective_and_reason() -> None:
    job = sweep(numTrials=4, parallelTrials=3, earlyStopping={"median": {"minTrials": 1}})
    trials = [
        trial(1, "Failed"),
        trial(0, "Succeeded", 0.5, history=((1, 0.5),)),
        trial(2, history=((1, 0.9),)),
    ]
    decision = decide(job.spec, trials)
    listed = to_dict(status_for(job, trials, decision, T0))["trials"]
    assert [(t["name"], t["phase"], t.get("objective")) for t in listed] == [
        ("sweep-0", "Succeeded", "0.5"),
        ("sweep-1", "Failed", None),
        ("sweep-2", "Running", None),
    ]
    assert listed[2]["reason"].startswith("stopped early: its best loss by step 1 (0.9)")
    assert listed[0]["parameters"] == [
        {"name": "lr", "value": "0.01"},
        {"name": "opt", "value": "sgd"},
    ]
