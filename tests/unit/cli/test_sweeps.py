"""``get optimizationjobs``, ``describe optimizationjob`` and ``delete optimizationjob`` over a
local home holding a finished sweep (its row as its supervisor left it; no process started)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from trainjob.cli import main
from trainjob.cli.sweeps import split_kind
from trainjob.executor import sweeps
from trainjob.local.client import sweep_store
from trainjob.local.state import home as homes
from trainjob.local.state.store import Store

JOB = {
    "apiVersion": "trainer.kubeflow.org/v1alpha1",
    "kind": "OptimizationJob",
    "metadata": {"name": "lr", "namespace": "default", "uid": "u-1",
                 "creationTimestamp": "2026-12-04T00:00:00Z"},
    "spec": {
        "objectives": [{"metric": "loss", "direction": "Minimize"}],
        "searchAlgorithm": {"random": {"seed": 3}},
        "parameters": [{"name": "lr", "searchSpace": {"uniform": {"min": "0.1", "max": "1"}}}],
        "numTrials": 3,
        "parallelTrials": 1,
        "trainJobTemplate": {
            "spec": {
                "runtimeRef": {"name": "torch-distributed"},
                "trainer": {"command": ["python", "-c", "print({{.lr}})"]},
            }
        },
    },
}  # fmt: skip
STATUS = {
    "conditions": [
        {"type": "Created", "status": "True", "reason": "TrialsCreated", "message": "made",
         "lastTransitionTime": "2026-12-04T00:00:00Z"},
        {"type": "Complete", "status": "True", "reason": "AllTrialsFinished",
         "message": "all 3 trials finished; the best is lr-1",
         "lastTransitionTime": "2026-12-04T00:01:00Z"},
    ],
    "result": {"trainJobName": "lr-1", "parameters": [{"name": "lr", "value": "0.25"}]},
    "trials": [
        {"name": "lr-0", "parameters": [{"name": "lr", "value": "0.9"}], "phase": "Succeeded",
         "objective": "0.81"},
        {"name": "lr-1", "parameters": [{"name": "lr", "value": "0.25"}], "phase": "Succeeded",
         "objective": "0.0625"},
        {"name": "lr-2", "parameters": [{"name": "lr", "value": "0.7"}], "phase": "Stopped",
         "reason": "stopped early: worse than the median"},
    ],
}  # fmt: skip


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    store = Store(homes.db_path(home))
    events = [{"type": "Normal", "reason": "TrialCreated", "message": "Created trial lr-0: lr=0.9",
               "timestamp": "2026-12-04T00:00:01Z", "involvedKind": "TrainJob",
               "involvedName": "lr-0"}]  # fmt: skip
    sweep_store.insert(
        store,
        sweep_store.SweepRow(
            "default",
            "lr",
            "u-1",
            "2026-12-04T00:00:00Z",
            time.time(),
            json.dumps(JOB),
            json.dumps(STATUS),
            sweeps.COMPLETE,
            str(tmp_path),
            events=json.dumps(events),
        ),
    )
    monkeypatch.setenv("TRAINJOB_HOME", str(home))
    monkeypatch.setenv("TRAINJOB_BACKEND", "local")
    return home


def test_get_optimizationjobs_shows_trials_done_and_the_best_objective(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["get", "optimizationjobs"]) == 0
    header, row = capsys.readouterr().out.splitlines()
    assert header.split() == ["NAME", "STATUS", "TRIALS", "BEST", "AGE"]
    assert row.split()[:4] == ["lr", "Complete", "3/3", "0.0625"]
    assert main(["get", "oj/lr", "-o", "name"]) == 0
    assert capsys.readouterr().out == "optimizationjob.trainer.kubeflow.org/lr\n"
    assert main(["get", "optimizationjob", "lr", "-o", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["status"]["result"]["trainJobName"] == "lr-1"


def test_describe_optimizationjob_lists_every_trial_the_best_and_events(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["describe", "optimizationjob", "lr"]) == 0
    text = capsys.readouterr().out
    assert "Best:       lr-1: loss=0.0625 (lr=0.25)" in text
    assert "Algorithm:  random (seed 3)" in text
    trials = text[text.index("Trials:\n") :]
    assert "lr-2" in trials and "Stopped" in trials and "worse than the median" in trials
    assert "TrialCreated" in text[text.index("Events:") :]


def test_delete_optimizationjob_removes_it_and_a_missing_one_is_not_found(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["delete", "optimizationjob", "lr"]) == 0
    assert "optimizationjob.trainer.kubeflow.org/lr deleted" in capsys.readouterr().out
    assert main(["get", "optimizationjob", "lr"]) == 1
    assert 'optimizationjobs.trainer.kubeflow.org "lr" not found' in capsys.readouterr().err


@pytest.mark.parametrize(
    ("names", "want"),
    [
        pytest.param(["optimizationjob", "a", "b"], (True, ["a", "b"]), id="kind then names"),
        pytest.param(["oj/a", "optimizationjobs/b"], (True, ["a", "b"]), id="kind/name"),
        pytest.param(["a", "b"], (False, ["a", "b"]), id="trainjobs"),
    ],
)
def test_delete_tells_optimizationjobs_from_trainjobs(
    names: list[str], want: tuple[bool, list[str]]
) -> None:
    assert split_kind(names) == want
