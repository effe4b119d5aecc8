"""trainjob's phase conditions (Queued, Initializing, Running, Restarting) from a JobSet's counts,
and what upstream's SDK computes from the conditions that result."""

from __future__ import annotations

from typing import Any

import pytest

from trainjob.api import phases as ph
from trainjob.core import conditions as cond

Obj = dict[str, Any]


def _jobset(*rjs: tuple[str, int, str]) -> Obj:
    """A JobSet spec of (name, replicas, ancestor step) replicated jobs."""
    return {
        "spec": {
            "replicatedJobs": [
                {
                    "name": name,
                    "replicas": replicas,
                    "template": {
                        "metadata": {"labels": {"trainer.kubeflow.org/trainjob-ancestor-step": a}}
                    },
                }
                for name, replicas, a in rjs
            ]
        }
    }


def _jobs(**counts: dict[str, int]) -> list[Obj]:
    return [{"name": name, **c} for name, c in counts.items()]


LLM = _jobset(("dataset-initializer", 1, "dataset-initializer"), ("node", 2, "trainer"))
TORCH = _jobset(("node", 1, "trainer"))


def _phase(conditions: list[Obj] | None = None, **kw: Any) -> ph.Phase | None:
    kw.setdefault("suspended", False)
    return ph.phase(conditions or [], kw.pop("jobset", LLM), kw.pop("jobs", []), **kw)


def test_queued_says_by_kueue_or_by_the_user() -> None:
    kueue = _phase(suspended=True, queue="gpus")
    assert kueue == ph.Phase(
        "Queued", "QueuedByKueue", "waiting for Kueue to admit it (queue gpus)"
    )
    user = _phase(suspended=True)
    assert user is not None and (user.type, user.reason) == ("Queued", "Suspended")


def test_initializing_while_an_initializer_runs_or_is_pending() -> None:
    running = _phase(jobs=_jobs(**{"dataset-initializer": {"ready": 1, "active": 1}}))
    assert running == ph.Phase("Initializing", "InitializerRunning", "dataset-initializer running")
    pending = _phase(jobs=_jobs(**{"dataset-initializer": {"active": 1}}))
    assert pending is not None and pending.reason == "InitializerPending"
    # done initializers are not initializing; the trainers pending: no phase (Starting)
    done = _jobs(**{"dataset-initializer": {"succeeded": 1}, "node": {"active": 2}})
    assert _phase(jobs=done) is None


def test_running_once_every_trainer_job_is_ready() -> None:
    init_done = {"dataset-initializer": {"succeeded": 1}}
    half = _phase(jobs=_jobs(**init_done, node={"ready": 1, "active": 2}))
    assert half is None
    full = _phase(jobs=_jobs(**init_done, node={"ready": 2, "active": 2}))
    assert full is not None and (full.type, full.reason) == ("Running", "AllTrainerPodsRunning")
    assert "node 2/2" in full.message
    one_done = _phase(jobs=_jobs(**init_done, node={"ready": 1, "succeeded": 1}))
    assert one_done is not None and one_done.type == "Running"


def test_restarting_until_every_trainer_runs_again() -> None:
    jobs = _jobs(node={"active": 1})
    restarting = _phase(jobset=TORCH, jobs=jobs, restarts=2)
    assert restarting is not None and (restarting.type, restarting.reason) == (
        "Restarting",
        "JobSetRestarting",
    )
    assert "attempt 2" in restarting.message
    again = _phase(jobset=TORCH, jobs=_jobs(node={"ready": 1, "active": 1}), restarts=2)
    assert again is not None and again.type == "Running" and "restart attempt 2" in again.message


def test_no_phase_when_finished_or_without_a_jobset() -> None:
    done = [{"type": "Complete", "status": "True"}]
    assert _phase(done, jobs=_jobs(node={"ready": 2})) is None
    failed = [{"type": "Failed", "status": "True"}]
    assert _phase(failed, suspended=True) is None
    assert _phase(jobset=None) is None


def test_one_phase_condition_at_a_time_removed_when_it_ends() -> None:
    conds: list[Obj] = [{"type": "Suspended", "status": "True", "reason": "Suspended"}]
    assert ph.set_phase(conds, ph.Phase("Queued", "Suspended", "m"), "t1")
    assert not ph.set_phase(conds, ph.Phase("Queued", "Suspended", "m"), "t2"), "no change"
    assert [k["type"] for k in conds] == ["Suspended", "Queued"]
    assert ph.set_phase(conds, ph.Phase("Running", "AllTrainerPodsRunning", "m"), "t3")
    assert [k["type"] for k in conds] == ["Suspended", "Running"]
    assert ph.current(conds) == ph.Phase("Running", "AllTrainerPodsRunning", "m")
    assert ph.set_phase(conds, None, "t4")
    assert [k["type"] for k in conds] == ["Suspended"]


def test_running_is_left_off_a_trainjob_without_any_other_condition() -> None:
    conds: list[Obj] = []
    assert ph.set_phase(conds, ph.Phase("Initializing", "InitializerRunning", "m"))
    assert ph.set_phase(conds, ph.Phase("Running", "AllTrainerPodsRunning", "m"))
    assert conds == [], "upstream's SDK reads Running only from a TrainJob without conditions"


def _kubeflow_sdk_status(conditions: list[Obj], nodes_running: bool) -> str:
    """The Kubeflow SDK 0.5.0's ``get_job().status`` (``KubernetesBackend.__get_trainjob_from_cr``
    in ``kubeflow/trainer/backends/kubernetes/backend.py``), rewritten over plain dicts: a True
    Complete/Failed wins; with no condition at all, Running when every node pod runs; else
    Created."""
    status = "Created"
    if conditions:
        for k in conditions:
            if k["type"] in ("Complete", "Failed") and k["status"] == "True":
                status = k["type"]
    elif nodes_running:
        status = "Running"
    return status


Step = tuple[bool, list[Obj], bool, int, bool]  # suspended, jobs, nodes running, restarts, done

LIFE: list[tuple[str, Step]] = [
    ("queued", (True, [], False, 0, False)),
    ("initializing", (False, _jobs(**{"dataset-initializer": {"ready": 1}}), False, 0, False)),
    ("starting", (False, _jobs(**{"dataset-initializer": {"succeeded": 1}}), False, 0, False)),
    (
        "running",
        (
            False,
            _jobs(**{"dataset-initializer": {"succeeded": 1}, "node": {"ready": 2}}),
            True,
            0,
            False,
        ),
    ),
    (
        "restarting",
        (
            False,
            _jobs(**{"dataset-initializer": {"succeeded": 1}, "node": {"active": 2}}),
            False,
            1,
            False,
        ),
    ),
    (
        "running again",
        (
            False,
            _jobs(**{"dataset-initializer": {"succeeded": 1}, "node": {"ready": 2}}),
            True,
            1,
            False,
        ),
    ),
    ("complete", (False, _jobs(node={"succeeded": 2}), False, 1, True)),
]


@pytest.mark.parametrize("suspended_first", [False, True], ids=["never-suspended", "resumed"])
def test_upstreams_sdk_computes_the_same_status_with_the_phase_conditions(
    suspended_first: bool,
) -> None:
    """Walk a TrainJob's life: upstream's conditions alone, and with trainjob's phase condition,
    give the Kubeflow SDK the same status at every step."""
    upstream: list[Obj] = []
    ours: list[Obj] = []
    seen = []
    for name, (suspended, jobs, nodes_running, restarts, done) in LIFE:
        if name == "queued" and not suspended_first:
            continue
        for conds in (upstream, ours):
            if suspended:
                cond.set_condition(conds, "Suspended", "True", "Suspended", "m")
            elif cond.find(conds, "Suspended") is not None:
                cond.set_condition(conds, "Suspended", "False", "Resumed", "m")
            if done:
                cond.set_condition(conds, "Complete", "True", "AllJobsCompleted", "m")
        now = ph.phase(ours, LLM, jobs, suspended=suspended, restarts=restarts)
        ph.set_phase(ours, now)
        assert _kubeflow_sdk_status(ours, nodes_running) == _kubeflow_sdk_status(
            upstream, nodes_running
        ), name
        carried = ph.current(ours)
        seen.append(carried.type if carried else None)
    if suspended_first:
        assert seen == ["Queued", "Initializing", None, "Running", "Restarting", "Running", None]
    else:
        assert seen == ["Initializing", None, None, "Restarting", None, None]
    assert [k["type"] for k in ours] == [k["type"] for k in upstream], "finished: upstream's"
