"""The OptimizationJob reconciler's pure parts: a trial's TrainJob as the job model, and the
bounded report history early stopping reads."""

from __future__ import annotations

from typing import Any

from trainjob.controller import optimizationjob as oj

Obj = dict[str, Any]


def trial(name: str = "s-0", sweep: str | None = "s", **status: Any) -> Obj:
    labels = {"trainer.kubeflow.org/optimization-job": sweep} if sweep else {}
    return {
        "metadata": {"name": name, "namespace": "ns", "labels": labels},
        "spec": {},
        "status": status,
    }


def report(time: str, loss: str) -> Obj:
    return {"metrics": [{"name": "loss", "value": loss}], "lastUpdatedTime": time}


def test_a_trial_is_created_running_once_its_jobset_exists_then_complete() -> None:
    assert oj.trial_state(trial(), None).phase == "Created"
    assert oj.trial_state(trial(), {"metadata": {}}).phase == "Running"
    done = trial(conditions=[{"type": "Complete", "status": "True", "reason": "R"}])
    assert oj.trial_state(done, {}).phase == "Complete"
    assert oj.sweep_of(done) == "ns/s"
    assert oj.sweep_of(trial(sweep=None)) is None


def test_the_history_keeps_each_new_report_bounded_and_forgets_a_deleted_trial() -> None:
    h = oj.ReportHistory(max_reports=3)
    for i in range(5):
        t = trial(trainerStatus=report(f"2026-12-04T00:00:0{i}Z", str(1 / (i + 1))))
        h.observe("MODIFIED", t)
        h.observe("MODIFIED", t)  # the same report again (another field changed): kept once
    assert [s.time[-3:] for s in h.samples("s-0", "ns")] == ["02Z", "03Z", "04Z"]
    h.observe("MODIFIED", trial(name="x", sweep=None, trainerStatus=report("t", "1")))
    assert len(h) == 3  # a TrainJob of no sweep is not kept
    h.observe("DELETED", trial())
    assert h.samples("s-0", "ns") == []
