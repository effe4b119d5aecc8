"""trainjob's phase conditions (``trainjob.api.phases``) written by the controller on the real
apiserver, through suspend (Kueue's queue label), resume, a JobSet restart and a failure. No
JobSet controller runs here: the test plays it by writing the JobSet's status, the counts the
Job controller's pods give (``tests/cluster/test_phases.py`` runs the same life with the real
JobSet and Job controllers and KWOK pods)."""

from __future__ import annotations

import time
from typing import Any

import pytest
from tests.integration.controller_harness import Controller, trainjob, wait_for
from tests.integration.test_controller import jobset_of, set_jobset_status

from trainjob.kube import Client
from trainjob.kube import resources as r

pytest_plugins = ["tests.integration.controller_fixtures"]
pytestmark = pytest.mark.integration
Obj = dict[str, Any]
PHASES = ("Queued", "Initializing", "Running", "Restarting")


def _conditions(kube: Client, name: str, ns: str) -> list[Obj]:
    return list((kube.get(r.TRAINJOBS, name, ns).get("status") or {}).get("conditions") or [])


def _phase(kube: Client, name: str, ns: str) -> tuple[str, str] | None:
    now = [c for c in _conditions(kube, name, ns) if c["type"] in PHASES]
    assert len(now) <= 1, now
    return (now[0]["type"], now[0]["reason"]) if now else None


def _wait_phase(kube: Client, name: str, ns: str, want: tuple[str, str] | None) -> None:
    try:
        wait_for(lambda: _phase(kube, name, ns) == want, timeout=20, what=f"phase {want}")
    except AssertionError as e:
        tj = kube.get(r.TRAINJOBS, name, ns)
        js = kube.get(r.JOBSETS, name, ns)
        raise AssertionError(f"{e}; TrainJob status {tj.get('status')}; JobSet {js}") from None


def _counts(ready: int = 0, active: int = 0) -> list[Obj]:
    return [{"name": "node", "ready": ready, "succeeded": 0, "failed": 0, "active": active,
             "suspended": 0}]  # fmt: skip


def test_phases_follow_the_jobset_through_suspend_resume_restart_and_failure(
    kube: Client, controller: Controller, namespace: str
) -> None:
    job = trainjob("life", namespace, suspend=True, trainer={"numNodes": 2})
    job["metadata"]["labels"] = {"kueue.x-k8s.io/queue-name": "team-a"}
    kube.create(r.TRAINJOBS, job)
    jobset_of(kube, "life", namespace)
    _wait_phase(kube, "life", namespace, ("Queued", "QueuedByKueue"))
    (queued,) = [c for c in _conditions(kube, "life", namespace) if c["type"] == "Queued"]
    assert queued["message"] == "waiting for Kueue to admit it (queue team-a)"

    # admitted (Kueue unsuspends it): Queued goes; pods pending: no phase; then both run
    kube.patch(r.TRAINJOBS, "life", {"spec": {"suspend": False}}, namespace)
    _wait_phase(kube, "life", namespace, None)
    set_jobset_status(kube, "life", namespace, {"replicatedJobsStatus": _counts(active=1)})
    time.sleep(1)
    assert _phase(kube, "life", namespace) is None, "not every trainer pod runs yet"
    set_jobset_status(kube, "life", namespace, {"replicatedJobsStatus": _counts(1, 1)})
    # after a resume the TrainJob has Suspended=False, so Running is written (what upstream's
    # SDK reads is Created either way)
    _wait_phase(kube, "life", namespace, ("Running", "AllTrainerPodsRunning"))
    types = [c["type"] for c in _conditions(kube, "life", namespace)]
    assert types == ["Suspended", "Running"], "the last condition (kubectl's State) is Running"

    # a JobSet restart: Restarting until every trainer pod runs again
    set_jobset_status(
        kube, "life", namespace, {"restarts": 1, "replicatedJobsStatus": _counts(active=1)}
    )
    _wait_phase(kube, "life", namespace, ("Restarting", "JobSetRestarting"))
    set_jobset_status(kube, "life", namespace, {"replicatedJobsStatus": _counts(1, 1)})
    _wait_phase(kube, "life", namespace, ("Running", "AllTrainerPodsRunning"))

    # failure: the phase condition goes, upstream's conditions stay as upstream writes them
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    failed = {"type": "Failed", "status": "True", "reason": "FailedJobs",
              "message": "jobset failed due to one or more job failures", "lastTransitionTime": now}  # fmt: skip
    set_jobset_status(kube, "life", namespace, {"conditions": [failed]})
    wait_for(
        lambda: (
            [c["type"] for c in _conditions(kube, "life", namespace)] == ["Suspended", "Failed"]
        ),
        timeout=20,
        what="Suspended and Failed only",
    )


def test_a_trainjob_never_suspended_gets_no_running_condition(
    kube: Client, controller: Controller, namespace: str
) -> None:
    """The Kubeflow SDK 0.5.0 reads Running only from a TrainJob without conditions."""
    kube.create(r.TRAINJOBS, trainjob("plain", namespace, trainer={"numNodes": 2}))
    jobset_of(kube, "plain", namespace)
    set_jobset_status(kube, "plain", namespace, {"replicatedJobsStatus": _counts(1, 1)})
    wait_for(
        lambda: (kube.get(r.TRAINJOBS, "plain", namespace).get("status") or {}).get("jobsStatus"),
        what="jobsStatus",
    )
    time.sleep(1)
    assert _conditions(kube, "plain", namespace) == []
    set_jobset_status(
        kube, "plain", namespace, {"restarts": 1, "replicatedJobsStatus": _counts(active=1)}
    )
    _wait_phase(kube, "plain", namespace, ("Restarting", "JobSetRestarting"))
    set_jobset_status(kube, "plain", namespace, {"replicatedJobsStatus": _counts(1, 1)})
    wait_for(lambda: _conditions(kube, "plain", namespace) == [], timeout=20, what="no conditions")
