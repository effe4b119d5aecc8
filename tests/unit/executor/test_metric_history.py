"""The executor interface's metric history: a TrainJob's ``status.trainerStatus`` as a sample,
and the default history (the latest report only, what a cluster keeps)."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import pytest

from trainjob.executor.base import Executor
from trainjob.executor.model import JobState, MetricSample, trainer_status_sample


def _tj(trainer_status: dict[str, Any] | None) -> dict[str, Any]:
    status = {} if trainer_status is None else {"trainerStatus": trainer_status}
    return {"metadata": {"name": "a"}, "spec": {}, "status": status}


class _OneJob(Executor):
    """Only ``state`` is real: the default ``metric_history`` reads nothing else."""

    backend = "test"

    def __init__(self, trainjob: dict[str, Any]) -> None:
        self.trainjob = trainjob

    @property
    def default_namespace(self) -> str:
        return "default"

    def state(self, name: str, namespace: str) -> JobState:
        return JobState(name, namespace, "Running", "2026-01-01T00:00:00Z", trainjob=self.trainjob)

    def _no(self, *a: Any, **k: Any) -> Any:
        raise AssertionError("not used")

    submit = check = exists = get = states = events = suspend = resume = delete = _no
    list_runtimes = get_runtime = _no

    def logs(self, *a: Any, **k: Any) -> Iterator[str]:
        raise AssertionError("not used")


def test_sample_of_a_trainer_status() -> None:
    s = trainer_status_sample(
        _tj(
            {
                "progressPercentage": 40,
                "estimatedRemainingSeconds": 12,
                "metrics": [{"name": "loss", "value": "0.5"}, {"name": "phase", "value": "warm"}],
                "lastUpdatedTime": "2026-01-01T00:00:05Z",
            }
        )
    )
    assert s == MetricSample(
        time="2026-01-01T00:00:05Z",
        metrics={"loss": "0.5", "phase": "warm"},
        progress_percentage=40,
        estimated_remaining_seconds=12,
    )
    assert s.number("loss") == 0.5
    assert s.number("phase") is None  # kept, but not a number
    assert s.number("absent") is None


@pytest.mark.parametrize("value", ["nan", "inf", "-inf"])
def test_non_finite_values_are_not_numbers(value: str) -> None:
    s = MetricSample("t", {"loss": value})
    assert s.number("loss") is None
    assert math.isnan(float(value)) or math.isinf(float(value))


def test_no_trainer_status_no_sample() -> None:
    assert trainer_status_sample(_tj(None)) is None
    assert trainer_status_sample({}) is None


def test_default_history_is_the_latest_report() -> None:
    ex = _OneJob(_tj({"metrics": [{"name": "loss", "value": "1"}], "lastUpdatedTime": "t1"}))
    assert not ex.keeps_metric_history
    assert [s.metrics for s in ex.metric_history("a", "default")] == [{"loss": "1"}]
    assert ex.metric_history("a", "default", since=1) == []
    assert _OneJob(_tj(None)).metric_history("a", "default") == []
