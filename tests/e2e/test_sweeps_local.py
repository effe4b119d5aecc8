"""Hyperparameter sweeps (OptimizationJob) on the local backend, through the OptimizerClient and
the CLI: real trials (TrainJobs run as processes), a real sweep supervisor process.

The trials are small, each a process of plain Python on a plain runtime (no torchrun): a torch
model of one linear layer (a second or two, most of it importing torch), else a fraction of a
second.
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.e2e import sweep_funcs as f

from trainjob import CustomTrainer, LocalBackendConfig, TrainJobTemplate
from trainjob.api.load import parse
from trainjob.local.client import sweep_store
from trainjob.local.state import procs
from trainjob.optimizer import (
    GridSearch,
    MedianStopping,
    Objective,
    OptimizerClient,
    RandomSearch,
    Search,
    TPESearch,
    TrialConfig,
)

pytestmark = pytest.mark.e2e
ROOT = Path(__file__).parents[2]

PLAIN = {
    "apiVersion": "trainer.kubeflow.org/v1alpha1",
    "kind": "ClusterTrainingRuntime",
    "metadata": {"name": "plain-python", "labels": {"trainer.kubeflow.org/framework": "python"}},
    "spec": {
        "mlPolicy": {"numNodes": 1},
        "template": {
            "spec": {
                "replicatedJobs": [
                    {
                        "name": "node",
                        "template": {
                            "metadata": {
                                "labels": {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}
                            },
                            "spec": {
                                "template": {
                                    "spec": {
                                        "containers": [{"name": "node", "image": "python:3.11"}]
                                    }
                                }
                            },
                        },
                    }
                ]
            }
        },
    },
}


@pytest.fixture
def marks(tmp_path: Path) -> Path:
    d = tmp_path / "marks"
    d.mkdir()
    return d


@pytest.fixture
def client(tmp_path: Path) -> Iterator[OptimizerClient]:
    work = tmp_path / "work"
    work.mkdir()
    c = OptimizerClient(LocalBackendConfig(home=tmp_path / "home", cwd=str(work)))
    c.sweeps.trials.apply_runtime(parse(PLAIN))
    yield c
    for job in c.list_jobs():
        c.delete_job(job.name)


def read_marks(marks: Path) -> list[dict[str, Any]]:
    return sorted(
        (json.loads(p.read_text()) for p in marks.glob("*.json")), key=lambda m: m["start"]
    )


def most_at_once(found: list[dict[str, Any]]) -> int:
    edges = sorted([(m["start"], 1) for m in found] + [(m["end"], -1) for m in found])
    now = most = 0
    for _, d in edges:
        now += d
        most = max(most, now)
    return most


def plain(func: Any, **args: Any) -> TrainJobTemplate:
    return TrainJobTemplate(
        trainer=CustomTrainer(func=func, func_args=args), runtime="plain-python"
    )


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="needs torch")
def test_six_trials_two_at_a_time_each_reports_its_loss_and_the_lowest_is_best(
    client: OptimizerClient, marks: Path
) -> None:
    name = client.optimize(
        trial_template=plain(f.linear_regression, marks=str(marks)),
        trial_config=TrialConfig(num_trials=6, parallel_trials=2),
        search_space={"lr": Search.loguniform(0.001, 0.5)},
        objectives=[Objective(metric="loss", direction="minimize")],
        algorithm=RandomSearch(random_state=11),
    )
    job = client.wait_for_job_status(name, timeout=300, polling_interval=0.5)
    assert job.status == "Complete"
    assert len(job.trials) == 6 and {t.phase for t in job.trials} == {"Succeeded"}
    ran = read_marks(marks)
    assert len(ran) == 6 and most_at_once(ran) <= 2
    # each trial reported its loss (every epoch's line, the last one its final loss)
    final = {}
    for t in job.trials:
        loss = next(m for m in t.metrics if m.name == "loss")
        assert float(loss.min) <= float(loss.latest) <= float(loss.max)
        final[t.name] = float(loss.latest)
        assert t.trainjob is not None and t.trainjob.status == "Complete"
        assert float(t.parameters["lr"]) == pytest.approx(
            next(m["lr"] for m in ran if abs(m["loss"] - final[t.name]) < 1e-5), rel=1e-6
        )
    best = client.get_best_results(name)
    assert best is not None and best.trial_name == min(final, key=final.__getitem__)
    assert best.parameters == next(t.parameters for t in job.trials if t.name == best.trial_name)
    assert any("loss=" in line for line in client.get_job_logs(name))  # the best trial's
    reasons = [e.reason for e in client.get_job_events(name)]
    assert reasons.count("TrialCreated") == 6 and "AllTrialsFinished" in reasons


def parameters_of(client: OptimizerClient, name: str) -> list[dict[str, str]]:
    job = client.wait_for_job_status(name, timeout=120, polling_interval=0.2)
    return [t.parameters for t in sorted(job.trials, key=lambda t: t.name)]


def test_a_seeded_random_or_tpe_sweep_proposes_the_same_trials_twice(
    client: OptimizerClient, marks: Path
) -> None:
    for algorithm in (RandomSearch(random_state=5), TPESearch(random_state=5)):
        runs = []
        for _ in range(2):
            name = client.optimize(
                trial_template=plain(f.quadratic, marks=str(marks)),
                trial_config=TrialConfig(num_trials=3, parallel_trials=1),
                search_space={"x": Search.uniform(-1.0, 1.0)},
                algorithm=algorithm,
            )
            runs.append(parameters_of(client, name))
        assert runs[0] == runs[1] and len({p["x"] for p in runs[0]}) == 3


def test_a_sweep_goes_on_after_its_supervisor_is_killed_and_no_trial_is_lost_or_run_twice(
    client: OptimizerClient, marks: Path
) -> None:
    name = client.optimize(
        trial_template=plain(f.quadratic, marks=str(marks), pause=0.6),
        trial_config=TrialConfig(num_trials=4, parallel_trials=1),
        search_space={"x": Search.uniform(-1.0, 1.0)},
        algorithm=RandomSearch(random_state=2),
    )
    store = client.sweeps.store
    deadline = time.monotonic() + 60
    while len(read_marks(marks)) < 1 and time.monotonic() < deadline:
        time.sleep(0.05)
    row = sweep_store.get(store, "default", name)
    assert row is not None and row.supervisor_pid is not None
    os.kill(row.supervisor_pid, signal.SIGKILL)
    assert procs.wait_gone(row.supervisor_pid, row.supervisor_start, timeout=10)
    job = client.wait_for_job_status(name, timeout=120, polling_interval=0.2)  # reads restart it
    assert job.status == "Complete" and len(job.trials) == 4
    after = sweep_store.get(store, "default", name)
    assert after is not None and after.supervisor_pid != row.supervisor_pid
    ran = read_marks(marks)
    assert sorted(m["x"] for m in ran) == sorted(float(t.parameters["x"]) for t in job.trials)
    assert len(ran) == 4 and most_at_once(ran) == 1


def sweep_time(client: OptimizerClient, marks: Path, early: bool) -> tuple[float, Any]:
    start = time.monotonic()
    name = client.optimize(
        trial_template=plain(f.curve, marks=str(marks), steps=12),
        trial_config=TrialConfig(num_trials=4, parallel_trials=1),
        search_space={"quality": Search.choice([1.0, 1.5, 40.0, 50.0])},
        algorithm=GridSearch(),
        early_stopping=MedianStopping(min_trials=2, start_step=2) if early else None,
    )
    job = client.wait_for_job_status(name, timeout=120, polling_interval=0.1)
    return time.monotonic() - start, job


def test_early_stopping_stops_the_bad_trials_says_why_and_ends_sooner(
    client: OptimizerClient, marks: Path
) -> None:
    plain_time, plain_job = sweep_time(client, marks, early=False)
    assert {t.phase for t in plain_job.trials} == {"Succeeded"}
    early_time, job = sweep_time(client, marks, early=True)
    stopped = [t for t in job.trials if t.phase == "Stopped"]
    assert stopped and all(float(t.parameters["quality"]) >= 40 for t in stopped)
    assert all("median" in t.reason for t in stopped)
    assert job.status == "Complete" and early_time < plain_time
    trainjob = stopped[0].trainjob
    assert trainjob is not None and trainjob.status != "Complete"


def test_the_cli_runs_a_grid_from_yaml_lists_describes_and_deletes_it(
    tmp_path: Path,
) -> None:
    env = dict(os.environ, TRAINJOB_HOME=str(tmp_path / "home"), TRAINJOB_BACKEND="local")
    manifest = ROOT / "examples" / "sweeps" / "grid.yaml"

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "trainjob", *args], env=env, capture_output=True, text=True,
            timeout=180, cwd=tmp_path,
        )  # fmt: skip

    run = cli("run", "-f", str(manifest), "--wait")
    assert run.returncode == 0, run.stderr
    assert "optimizationjob.trainer.kubeflow.org/grid created" in run.stdout
    assert "best grid-" in run.stderr
    got = cli("get", "optimizationjobs")
    assert got.returncode == 0 and got.stdout.split("\n")[1].split()[:4] == [
        "grid", "Complete", "6/6", "10.0",
    ]  # fmt: skip
    described = cli("describe", "optimizationjob", "grid")
    assert described.returncode == 0, described.stderr
    for a in ("1", "2"):
        for b in ("10", "20", "30"):
            assert f"a={a},b={b}" in described.stdout
    assert "Succeeded" in described.stdout and "TrialCreated" in described.stdout
    trials = cli("get", "jobs", "-l", "trainer.kubeflow.org/optimization-job=grid", "-o", "name")
    assert len(trials.stdout.split()) == 6
    deleted = cli("delete", "optimizationjob", "grid")
    assert deleted.returncode == 0 and "grid deleted" in deleted.stdout
    assert cli("get", "jobs", "-o", "name").stdout.strip() == ""
    gone = cli("get", "optimizationjob", "grid")
    assert gone.returncode == 1 and "not found" in gone.stderr


def test_the_kubeflow_sdk_optimizer_example_runs_locally(tmp_path: Path) -> None:
    env = dict(os.environ, TRAINJOB_HOME=str(tmp_path / "home"), TRAINJOB_BACKEND="local")
    example = ROOT / "examples" / "sweeps" / "optimizer_sdk.py"
    done = subprocess.run(
        [sys.executable, str(example)], env=env, capture_output=True, text=True, timeout=300,
        cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "best parameters:" in done.stdout and "'lr'" in done.stdout
