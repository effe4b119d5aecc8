"""A run's progress reports (KEP-2779) from a transformers ``Trainer``, none of which a finished
job needs is throttled away.

transformers' own ``KubeflowCallback`` (which transformers registers whenever
``KUBEFLOW_TRAINER_SERVER_URL`` is set) posts from ``on_step_end``, at most every 5 s, with the
metrics of the log before: a run's first loss waits 5 s after the start report, so a run of a
few seconds reported one loss, its last. :class:`Reporter` (which :func:`install` puts in its
place) sends the same reports, with three differences:

- the first report with a loss is sent at once (:func:`trainjob.progress.update_unthrottled`),
  so a run that logs more than one step shows at least two reports with a loss: where it began
  and where it ended;
- the last report (100 %, ETA 0, every metric logged, ``train_loss`` and the run's times among
  them) is sent at ``on_train_end`` whatever the throttle says, as ``KubeflowCallback``'s is;
- each report is made from ``on_log``, so its step, epoch and loss are the same step's; a step
  that logs nothing reports its progress from ``on_step_end`` (throttled). The ETA is counted
  over the steps this run made (a run resumed from step N does not count those N as fast).

Rank 0 only reports (as upstream); ``DISABLE_KUBEFLOW_INTEGRATION=TRUE`` turns it off, as it
does transformers' callback. Every post goes through :mod:`trainjob.progress` (upstream's client
rules: the token, TLS with the job's CA, never raises). Used by the LLM trainer
(:mod:`trainjob.trainers.llm.train`, :mod:`trainjob.trainers.llm.trl.train`).
"""

from __future__ import annotations

import os
import time
from typing import Any

from trainjob import progress
from trainjob.core import trainerstatus as ts

DISABLE_ENV = "DISABLE_KUBEFLOW_INTEGRATION"  # transformers' switch for its KubeflowCallback


def enabled() -> bool:
    """Whether a report would be sent: inside a TrainJob (its status server's URL is set) and
    not turned off (transformers' rule for its own callback)."""
    if os.environ.get(DISABLE_ENV, "FALSE").upper() == "TRUE":
        return False
    return bool(os.environ.get(ts.ENV_SERVER_URL))


def install(trainer: Any) -> None:
    """Report ``trainer``'s progress with :class:`Reporter` instead of transformers'
    ``KubeflowCallback`` (one reporter, or the two would race for the status)."""
    from transformers.integrations.integration_utils import KubeflowCallback

    trainer.remove_callback(KubeflowCallback)
    trainer.add_callback(make_reporter())


def make_reporter() -> Any:
    """A new :class:`Reporter` (a ``transformers.TrainerCallback``)."""
    from transformers import TrainerCallback

    class Reporter(TrainerCallback):
        """See the module docstring."""

        def __init__(self) -> None:
            self.on = False
            self.metrics: dict[str, float | int | str] = {}
            self.started = 0.0
            self.first_step = 0
            self.loss_sent = False

        def on_train_begin(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            self.on = bool(state.is_world_process_zero) and enabled()
            if not self.on:
                return
            self.started, self.first_step = time.monotonic(), int(state.global_step)
            self.metrics, self.loss_sent = {}, False
            if state.max_steps:
                self.metrics["total_steps"] = int(state.max_steps)
            progress.update_unthrottled(
                progress_percent=percent(state.global_step, state.max_steps),
                metrics=self.metrics or None,
            )

        def on_step_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            if self.on and not control.should_log:  # a logged step reports from on_log
                self._report(state, force=False)

        def on_log(self, args: Any, state: Any, control: Any, logs: Any = None, **kw: Any) -> None:
            if not self.on or not logs:
                return
            for key, value in logs.items():
                if isinstance(value, int | float) and not isinstance(value, bool):
                    self.metrics[str(key)] = value
            if "loss" not in logs or state.global_step <= 0:
                return  # eval metrics and the run's summary: sent with the next report
            self._position(state)
            first = not self.loss_sent
            self.loss_sent = True
            self._report(state, force=first)

        def on_train_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            if not self.on:
                return
            self._position(state)
            progress.update_unthrottled(
                progress_percent=100, estimated_remaining_seconds=0, metrics=self.metrics
            )
            self.on = False

        def _position(self, state: Any) -> None:
            self.metrics["current_step"] = int(state.global_step)
            if state.max_steps:
                self.metrics["total_steps"] = int(state.max_steps)
            if state.epoch is not None:
                self.metrics["current_epoch"] = round(float(state.epoch), 2)

        def _report(self, state: Any, *, force: bool) -> None:
            if not state.max_steps or state.max_steps <= 0:
                return
            self._position(state)
            send = progress.update_unthrottled if force else progress.update_trainjob_status
            send(
                progress_percent=percent(state.global_step, state.max_steps),
                estimated_remaining_seconds=eta(
                    time.monotonic() - self.started,
                    state.global_step - self.first_step,
                    state.max_steps - state.global_step,
                ),
                metrics=self.metrics,
            )

    return Reporter()


def percent(step: int, total: int) -> int:
    """The progress of ``step`` of ``total`` while the run goes on: 0-99 (100 is the last
    report's, at the run's end), as ``KubeflowCallback`` reports it."""
    if not total or total <= 0:
        return 0
    return max(0, min(99, int(step * 100 / total)))


def eta(elapsed: float, done: int, left: int) -> int | None:
    """Seconds left at the rate so far (``done`` steps in ``elapsed`` s); None before a step."""
    if done <= 0:
        return None
    return max(0, int(elapsed / done * max(0, left)))
