"""The sweep loop (``optimizer.driver``): passes over a fake executor whose trials the test moves
by hand (ending one is one line), as upstream's envtest tests play the JobSet controller.

The local executor runs every trial as processes (seconds each); its own sweep is e2e
(tests/e2e/test_sweeps_local.py). Here: what a pass creates, stops and writes, and that a new
driver (a killed one restarted) picks up where the old one was, with no trial made twice.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pytest

from trainjob.api import constants as c
from trainjob.api.optimization import OptimizationJob, OptimizationJobStatus, parse_optimization_job
from trainjob.api.trainer import Runtime, TrainJob
from trainjob.errors import AlreadyExistsError, NotFoundError
from trainjob.executor import model as st
from trainjob.executor import sweeps
from trainjob.executor.base import Executor
from trainjob.executor.model import Event, JobState, MetricSample
from trainjob.optimizer.driver import Driver, Pass


class FakeExecutor(Executor):
    """TrainJobs as dicts; ``finish``/``report`` play what a trial's training would do."""

    backend = "fake"
    keeps_metric_history = True

    def __init__(self) -> None:
        self.jobs: dict[str, dict[str, Any]] = {}
        self.phases: dict[str, str] = {}
        self.reports: dict[str, list[MetricSample]] = {}
        self.submitted: list[str] = []
        self.hidden: set[str] = set()  # left out of a listing (one made by a killed pass)
        self.lines: dict[str, list[str]] = {}  # each trial's log

    @property
    def default_namespace(self) -> str:
        return "default"

    def submit(
        self,
        trainjob: TrainJob,
        runtimes: Sequence[Runtime] = (),
        *,
        cwd: str | None = None,
        workspace: Any = None,
    ) -> TrainJob:
        name = trainjob.metadata.name or ""
        if name in self.jobs:
            raise AlreadyExistsError(f'trainjobs.trainer.kubeflow.org "{name}" already exists')
        self.jobs[name] = trainjob.to_dict()
        self.phases[name] = st.CREATED
        self.submitted.append(name)
        return trainjob

    def states(self, namespace: str | None = None, *, pods: bool = True) -> list[JobState]:
        return [self.state(n, "default") for n in self.jobs if n not in self.hidden]

    def state(self, name: str, namespace: str) -> JobState:
        if name not in self.jobs:
            raise NotFoundError(name)
        return JobState(
            name, "default", self.phases[name], "2026-12-04T00:00:00Z",
            trainjob=copy.deepcopy(self.jobs[name]),
        )  # fmt: skip

    def annotate(
        self, name: str, namespace: str, annotations: Mapping[str, str | None]
    ) -> TrainJob:
        meta = self.jobs[name].setdefault("metadata", {})
        meta.setdefault("annotations", {}).update(annotations)
        return TrainJob.model_validate(self.jobs[name])

    def suspend(self, name: str, namespace: str) -> TrainJob:
        self.jobs[name]["spec"]["suspend"] = True
        if self.phases[name] not in st.FINISHED:
            self.phases[name] = st.SUSPENDED
        return TrainJob.model_validate(self.jobs[name])

    def metric_history(self, name: str, namespace: str, *, since: int = 0) -> list[MetricSample]:
        return self.reports.get(name, [])[since:]

    # -- what the test plays ---------------------------------------------------------------------

    def run(self, name: str) -> None:
        self.phases[name] = st.RUNNING

    def report(self, name: str, loss: float, step: int) -> None:
        sample = MetricSample(
            f"2026-12-04T00:00:{step:02d}Z", {"loss": str(loss), "step": str(step)}
        )
        self.reports.setdefault(name, []).append(sample)
        self.jobs[name]["status"] = {
            "trainerStatus": {
                "lastUpdatedTime": sample.time,
                "metrics": [{"name": k, "value": v} for k, v in sample.metrics.items()],
            }
        }

    def finish(self, name: str, loss: float | None) -> None:
        if loss is not None:
            self.report(name, loss, len(self.reports.get(name, [])) + 1)
        self.phases[name] = st.COMPLETE

    # -- unused by the driver ---------------------------------------------------------------------

    def check(self, *a: Any, **k: Any) -> None:
        raise NotImplementedError

    def exists(self, name: str, namespace: str) -> bool:
        return name in self.jobs

    def get(self, name: str, namespace: str) -> TrainJob:
        return TrainJob.model_validate(self.jobs[name])

    def events(self, name: str, namespace: str) -> list[Event]:
        return []

    def logs(self, name: str, *a: Any, **k: Any) -> Iterator[str]:
        return iter(self.lines.get(name, []))

    def resume(self, name: str, namespace: str) -> TrainJob:
        raise NotImplementedError

    def delete(self, name: str, namespace: str, *, purge: bool = False) -> None:
        self.jobs.pop(name)

    def list_runtimes(self, namespace: str | None = None) -> list[Runtime]:
        return []

    def get_runtime(self, name: str, kind: str, namespace: str | None = None) -> Runtime:
        raise NotImplementedError


def sweep(**spec: Any) -> OptimizationJob:
    obj: dict[str, Any] = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "OptimizationJob",
        "metadata": {"name": "lr", "namespace": "default", "uid": "u-1"},
        "spec": {
            "objectives": [{"metric": "loss", "direction": "Minimize"}],
            "parameters": [
                {"name": "lr", "searchSpace": {"logUniform": {"min": "0.001", "max": "0.1"}}}
            ],
            "numTrials": 6,
            "parallelTrials": 2,
            "trainJobTemplate": {
                "spec": {
                    "runtimeRef": {"name": "torch-distributed"},
                    "trainer": {"command": ["python", "-c", "print({{.lr}})"]},
                }
            },
            **spec,
        },
    }
    return parse_optimization_job(obj)


class Loop:
    """A driver and the status it wrote, the job's status carried from pass to pass as a
    backend stores it."""

    def __init__(self, ex: FakeExecutor, job: OptimizationJob) -> None:
        self.ex, self.job, self.driver = ex, job, Driver(ex)
        self.writes: list[OptimizationJobStatus] = []

    def sync(self) -> Pass:
        p = self.driver.sync(self.job, self.writes.append, now="2026-12-04T00:00:00Z")
        self.job = self.job.model_copy(update={"status": p.status})
        return p

    def restart(self) -> None:
        self.driver = Driver(self.ex)  # a new process: nothing kept but the executor's objects


def phase(job: OptimizationJob) -> str:
    return sweeps.phase(job.status.to_dict() if job.status else None)


def test_a_sweep_runs_every_trial_two_at_a_time_and_the_lowest_loss_is_best() -> None:
    ex = FakeExecutor()
    loop = Loop(ex, sweep())
    losses = [0.9, 0.3, 0.5, 0.1, 0.7, 0.4]
    loop.sync()
    assert ex.submitted == ["lr-0", "lr-1"]
    for i, loss in enumerate(losses):
        loop.sync()
        assert sum(ex.phases[n] in (st.CREATED, st.RUNNING) for n in ex.jobs) <= 2
        ex.finish(f"lr-{i}", loss)
    p = loop.sync()
    assert ex.submitted == [f"lr-{i}" for i in range(6)]
    assert p.finished and phase(loop.job) == sweeps.COMPLETE
    assert p.status.result is not None and p.status.result.train_job_name == "lr-3"
    trials = {t.name: t for t in p.status.trials or ()}
    assert {n: t.phase for n, t in trials.items()} == {f"lr-{i}": "Succeeded" for i in range(6)}
    assert float(trials["lr-3"].objective or "nan") == pytest.approx(0.1)
    trial = ex.jobs["lr-0"]["metadata"]
    assert trial["labels"][c.LABEL_OPTIMIZATION_JOB] == "lr"
    assert trial["ownerReferences"][0]["uid"] == "u-1"


def test_a_restarted_driver_makes_no_trial_again_and_goes_on() -> None:
    ex = FakeExecutor()
    loop = Loop(ex, sweep())
    loop.sync()
    loop.restart()
    loop.sync()  # the same two trials still run: nothing new
    assert ex.submitted == ["lr-0", "lr-1"]
    ex.finish("lr-0", 0.5)
    loop.restart()
    loop.sync()
    assert ex.submitted == ["lr-0", "lr-1", "lr-2"]


def test_a_trial_made_by_a_pass_that_did_not_see_it_is_not_made_twice() -> None:
    ex = FakeExecutor()
    loop = Loop(ex, sweep())
    loop.sync()
    ex.hidden = {"lr-1"}  # the listing misses it (made by a pass killed before it listed)
    ex.finish("lr-0", 0.5)
    loop.sync()  # asks for lr-1 (AlreadyExists) and lr-2
    assert ex.submitted == ["lr-0", "lr-1", "lr-2"]
    ex.hidden = set()
    loop.sync()
    assert ex.submitted == ["lr-0", "lr-1", "lr-2"]


def test_early_stopping_stops_a_bad_trial_saying_why_and_a_killed_pass_is_finished() -> None:
    ex = FakeExecutor()
    job = sweep(numTrials=3, parallelTrials=3, earlyStopping={"median": {"minTrials": 1}})
    loop = Loop(ex, job)
    loop.sync()
    for step in (1, 2, 3):
        ex.report("lr-0", 1.0 / step, step)
    ex.finish("lr-0", None)
    ex.run("lr-1")
    ex.report("lr-1", 5.0, 1)
    ex.report("lr-1", 5.0, 2)
    p = loop.sync()
    assert [n for n, _ in p.decision.stop] == ["lr-1"]
    said = ex.jobs["lr-1"]["metadata"]["annotations"][c.ANNOTATION_TRIAL_STOPPED]
    assert "median" in said and ex.phases["lr-1"] == st.SUSPENDED
    trial = next(t for t in loop.sync().status.trials or () if t.name == "lr-1")
    assert trial.phase == "Stopped" and trial.reason == said
    # A pass killed between the annotation and the suspend: the next one suspends it.
    ex.run("lr-2")
    ex.annotate("lr-2", "default", {c.ANNOTATION_TRIAL_STOPPED: "stopped early: by hand"})
    ex.jobs["lr-2"]["spec"].pop("suspend", None)
    loop.sync()
    assert ex.phases["lr-2"] == st.SUSPENDED


def test_a_trial_that_completes_without_the_objective_failed_and_says_so() -> None:
    ex = FakeExecutor()
    loop = Loop(ex, sweep(numTrials=1, parallelTrials=1))
    loop.sync()
    ex.finish("lr-0", None)
    p = loop.sync()
    trial = (p.status.trials or [])[0]
    assert trial.phase == "Failed" and "MetricsUnavailable" in (trial.reason or "")
    assert p.finished and phase(loop.job) == sweeps.FAILED


def test_grid_makes_exactly_the_product_of_the_choices() -> None:
    ex = FakeExecutor()
    job = sweep(
        numTrials=100,
        parallelTrials=100,
        searchAlgorithm={"grid": {}},
        parameters=[
            {"name": "lr", "searchSpace": {"categorical": {"choices": ["0.1", "0.01"]}}},
            {"name": "opt", "searchSpace": {"categorical": {"choices": ["sgd", "adam", "rms"]}}},
        ],
        trainJobTemplate={
            "spec": {
                "runtimeRef": {"name": "torch-distributed"},
                "trainer": {"command": ["echo", "{{.lr}}", "{{.opt}}"]},
            }
        },
    )
    loop = Loop(ex, job)
    loop.sync()
    made = {tuple(ex.jobs[n]["spec"]["trainer"]["command"][1:]) for n in ex.submitted}
    assert made == {(lr, o) for lr in ("0.1", "0.01") for o in ("sgd", "adam", "rms")}
    assert len(ex.submitted) == 6


def test_a_seeded_random_sweep_proposes_the_same_trials_twice() -> None:
    def run() -> list[list[str]]:
        ex = FakeExecutor()
        loop = Loop(ex, sweep(searchAlgorithm={"random": {"seed": 7}}))
        for i in range(6):
            loop.sync()
            ex.finish(f"lr-{i}", 0.1 * i)
        return [ex.jobs[n]["spec"]["trainer"]["command"] for n in ex.submitted]

    assert run() == run()


def test_a_trial_that_only_printed_its_loss_is_read_from_its_log_as_katibs_collector_does() -> None:
    ex = FakeExecutor()
    loop = Loop(ex, sweep(numTrials=1, parallelTrials=1))
    loop.sync()
    ex.lines["lr-0"] = ["epoch=1 loss=0.5", "noise", "epoch=2 loss=2.5e-1 acc=0.9"]
    ex.finish("lr-0", None)
    p = loop.sync()
    trial = (p.status.trials or [])[0]
    assert trial.phase == "Succeeded" and float(trial.objective or "nan") == 0.25
    assert p.finished and phase(loop.job) == sweeps.COMPLETE
