"""The Kubernetes executor's pure mapping: a TrainJob, its JobSet and pods -> the phase, steps and times the
job commands print, as the local backend reports them."""

from __future__ import annotations

from typing import Any

from trainjob.cluster.state import about_trainjob as is_ours
from trainjob.cluster.state import job_state, pod_state


def pod(job: str, index: int, phase: str, **status: Any) -> dict[str, Any]:
    return {
        "metadata": {
            "name": f"tj-{job}-0-{index}-x",
            "labels": {
                "jobset.sigs.k8s.io/replicatedjob-name": job,
                "batch.kubernetes.io/job-completion-index": str(index),
                "jobset.sigs.k8s.io/restart-attempt": "1",
            },
        },
        "status": {"phase": phase, **status},
    }


def trainjob(*conditions: dict[str, Any], suspend: bool = False) -> dict[str, Any]:
    return {
        "metadata": {"name": "tj", "namespace": "ns", "creationTimestamp": "2026-11-30T01:00:00Z"},
        "spec": {"suspend": suspend},
        "status": {"conditions": list(conditions)},
    }


JOBSET = {
    "spec": {"replicatedJobs": [{"name": "dataset-initializer"}, {"name": "node"}]},
    "status": {"restarts": 2},
}


def test_a_failed_container_gives_exit_code_message_and_finish_time() -> None:
    p = pod_state(
        pod(
            "node",
            1,
            "Failed",
            startTime="2026-11-30T01:00:05Z",
            containerStatuses=[
                {"state": {"terminated": {"exitCode": 0, "finishedAt": "2026-11-30T01:01:00Z"}}},
                {
                    "state": {
                        "terminated": {
                            "exitCode": 137,
                            "reason": "OOMKilled",
                            "finishedAt": "2026-11-30T01:02:00Z",
                        }
                    }
                },
            ],
        )
    )
    assert (p.job, p.index, p.phase, p.exit_code) == ("node", 1, "Failed", 137)
    assert (p.message, p.finished, p.started, p.restarts) == (
        "OOMKilled",
        "2026-11-30T01:02:00Z",
        "2026-11-30T01:00:05Z",
        1,
    )


def test_a_running_pod_has_no_exit_code_and_is_ready_from_its_condition() -> None:
    p = pod_state(
        pod(
            "node",
            0,
            "Running",
            conditions=[{"type": "Ready", "status": "True"}],
            containerStatuses=[{"state": {"running": {}}}],
        )
    )
    assert (p.exit_code, p.finished, p.ready) == (None, None, True)


def test_phase_steps_order_and_times() -> None:
    pods = [
        pod("node", 1, "Running", startTime="2026-11-30T01:00:09Z"),
        pod("node", 0, "Pending"),
        pod("dataset-initializer", 0, "Succeeded", startTime="2026-11-30T01:00:02Z"),
    ]
    s = job_state(trainjob(), JOBSET, pods)
    assert s.phase == "Running" and s.restarts == 2
    assert [(p.job, p.index) for p in s.pods] == [
        ("dataset-initializer", 0),
        ("node", 0),
        ("node", 1),
    ]
    assert s.started == "2026-11-30T01:00:02Z" and s.completed is None
    assert job_state(trainjob(), None, []).phase == "Created"
    assert job_state(trainjob(suspend=True), JOBSET, pods).phase == "Suspended"
    done = trainjob(
        {"type": "Suspended", "status": "False"},
        {
            "type": "Failed",
            "status": "True",
            "reason": "FailedJobs",
            "message": "jobset failed",
            "lastTransitionTime": "2026-11-30T01:09:00Z",
        },
    )
    s = job_state(done, JOBSET, pods)
    assert (s.phase, s.reason, s.message, s.completed) == (
        "Failed",
        "FailedJobs",
        "jobset failed",
        "2026-11-30T01:09:00Z",
    )


def test_events_of_the_job_its_jobset_jobs_podgroup_and_pods_only() -> None:
    def ev(kind: str, name: str) -> dict[str, Any]:
        return {"involvedObject": {"kind": kind, "name": name}}

    pods = {"tj-node-0-0-x"}
    assert is_ours(ev("TrainJob", "tj"), "tj", pods)
    assert is_ours(ev("JobSet", "tj"), "tj", pods)
    assert is_ours(ev("Job", "tj-node-0"), "tj", pods)
    assert is_ours(ev("PodGroup", "tj"), "tj", pods)
    assert is_ours(ev("Pod", "tj-node-0-0-x"), "tj", pods)
    assert not is_ours(ev("TrainJob", "tj2"), "tj", pods)
    assert not is_ours(ev("Pod", "other"), "tj", pods)
    assert not is_ours(ev("Job", "tjx-node-0"), "tj", pods)
