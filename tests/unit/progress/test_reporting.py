"""The built-in trainers' progress reports (:mod:`trainjob.trainers.reporting`) against the local
backend's real status server: a run's first report with a loss and its last one (100 %, ETA 0,
the final metrics) are sent though the 5 s throttle would drop them, and the reports between
are throttled as upstream's helper throttles. The callback is driven as transformers' Trainer
drives it (its TrainerState and TrainerControl, the hooks in the Trainer's order: on_step_end,
then on_log for a logged step); the whole training run is tests/e2e/test_llm_lora_two_nodes.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from trainjob import progress
from trainjob.core import trainerstatus as ts
from trainjob.local.job import statusserver
from trainjob.trainers import reporting

transformers = pytest.importorskip("transformers")


class Run:
    """A status server with the env a trainer pod gets, and the Trainer's state and args."""

    def __init__(self, tmp: Path, max_steps: int) -> None:
        self.updates: list[dict[str, Any]] = []
        self.creds = statusserver.credentials(tmp / "job")
        self.server = statusserver.StatusServer("default", "job", self.creds, self.updates.append)
        self.args = transformers.TrainingArguments(output_dir=str(tmp / "out"), report_to="none")
        self.state = transformers.TrainerState(max_steps=max_steps)
        self.control = transformers.TrainerControl()
        self.reporter = reporting.make_reporter()

    def begin(self) -> None:
        self.reporter.on_train_begin(self.args, self.state, self.control)

    def step(self, loss: float | None) -> None:
        """One optimizer step; logged (with ``loss``) unless None."""
        self.state.global_step += 1
        self.state.epoch = self.state.global_step / self.state.max_steps
        self.control.should_log = loss is not None
        self.reporter.on_step_end(self.args, self.state, self.control)
        if loss is not None:
            logs = {"loss": loss, "learning_rate": 3e-4, "epoch": self.state.epoch}
            self.reporter.on_log(self.args, self.state, self.control, logs=logs)
        self.control.should_log = False

    def end(self, train_loss: float) -> None:
        summary = {"train_runtime": 1.5, "train_loss": train_loss, "epoch": self.state.epoch}
        self.reporter.on_log(self.args, self.state, self.control, logs=summary)
        self.reporter.on_train_end(self.args, self.state, self.control)

    def metrics(self, i: int) -> dict[str, str]:
        return {m["name"]: m["value"] for m in self.updates[i].get("metrics") or ()}


@pytest.fixture
def run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Run]:
    r = Run(tmp_path, max_steps=8)
    for k, v in statusserver.pod_env(r.server.url, r.creds).items():
        monkeypatch.setenv(k, v)
    monkeypatch.delenv(reporting.DISABLE_ENV, raising=False)
    progress._reset()
    yield r
    progress._reset()
    r.server.stop()


def test_a_run_within_the_throttle_sends_its_start_its_first_loss_and_its_end(run: Run) -> None:
    run.begin()
    losses = [3.5, 3.4, 3.3, 3.2, 3.1, 3.0, 2.9, 2.8]
    for loss in losses:
        run.step(loss)
    run.end(train_loss=3.15)
    # eight steps in well under 5 s: the throttle drops every step but the first with a loss
    assert [u.get("progressPercentage") for u in run.updates] == [0, 12, 100]
    assert run.metrics(0) == {"total_steps": "8"}
    first = run.metrics(1)
    assert first["loss"] == "3.5" and first["current_step"] == "1", "the first loss, its step"
    assert run.updates[1]["estimatedRemainingSeconds"] >= 0
    last = run.metrics(2)
    assert run.updates[2]["estimatedRemainingSeconds"] == 0
    assert last["loss"] == "2.8" and last["train_loss"] == "3.15", "the final metrics"
    assert last["current_step"] == "8" and last["total_steps"] == "8"
    assert float(first["loss"]) > float(last["loss"]), "two reports with a loss: it fell"


def test_the_reports_between_are_throttled_as_upstreams_helper(run: Run) -> None:
    run.begin()
    run.step(3.5)
    run.step(3.4)  # within 5 s of the first loss: throttled
    assert len(run.updates) == 2
    progress._last_update -= ts.MIN_UPDATE_INTERVAL_SECONDS  # 5 s later
    run.step(3.3)
    assert len(run.updates) == 3 and run.metrics(2)["loss"] == "3.3"
    assert run.metrics(2)["current_step"] == "3", "the step and its own loss in one report"
    run.step(None)  # a step that logs nothing reports its progress from on_step_end, throttled
    assert len(run.updates) == 3
    progress._last_update -= ts.MIN_UPDATE_INTERVAL_SECONDS
    run.step(None)
    assert len(run.updates) == 4 and run.updates[3]["progressPercentage"] == 62
    assert run.metrics(3)["current_step"] == "5" and run.metrics(3)["loss"] == "3.3"
    run.end(train_loss=3.4)  # right after a report: sent all the same
    assert run.updates[-1]["progressPercentage"] == 100 and len(run.updates) == 5


def test_progress_stays_below_100_until_the_run_has_ended(run: Run) -> None:
    run.state.max_steps = 2
    run.begin()
    run.step(3.0)
    progress._last_update -= ts.MIN_UPDATE_INTERVAL_SECONDS
    run.step(2.0)  # the last step: 99 %, 100 is the end's
    assert [u["progressPercentage"] for u in run.updates] == [0, 50, 99]
    run.end(train_loss=2.5)
    assert run.updates[-1]["progressPercentage"] == 100


@pytest.mark.parametrize("where", ["another-rank", "disabled", "outside-a-trainjob"])
def test_it_sends_nothing_from_another_rank_when_disabled_or_outside_a_trainjob(
    run: Run, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    if where == "another-rank":
        run.state.is_world_process_zero = False
    elif where == "disabled":
        monkeypatch.setenv(reporting.DISABLE_ENV, "true")
    else:
        monkeypatch.delenv(ts.ENV_SERVER_URL)
    run.begin()
    run.step(3.0)
    run.end(train_loss=3.0)
    assert run.updates == []


def test_install_takes_the_place_of_transformers_kubeflow_callback(
    run: Run, tmp_path: Path
) -> None:
    import torch
    from transformers.integrations.integration_utils import KubeflowCallback

    # with the env set, transformers adds "kubeflow" to report_to (even "none") and registers
    # its callback in the Trainer
    args = transformers.TrainingArguments(
        output_dir=str(tmp_path / "t"), report_to="none", use_cpu=True
    )
    trainer = transformers.Trainer(model=torch.nn.Linear(2, 2), args=args)
    kinds = [type(c) for c in trainer.callback_handler.callbacks]
    assert KubeflowCallback in kinds, kinds
    reporting.install(trainer)
    kinds = [type(c) for c in trainer.callback_handler.callbacks]
    assert KubeflowCallback not in kinds, "one reporter: the two would race"
    assert [k.__name__ for k in kinds].count("Reporter") == 1, kinds


def test_the_eta_counts_the_steps_this_run_made() -> None:
    assert reporting.eta(10.0, 0, 5) is None
    assert reporting.eta(10.0, 5, 5) == 10
    assert reporting.eta(10.0, 5, -1) == 0
    assert reporting.percent(3, 0) == 0 and reporting.percent(8, 8) == 99
