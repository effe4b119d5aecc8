"""KEP-2899 on the real apiserver: ``status.startTime``/``completionTime``, and a finished
TrainJob deleted after its ``ttlSecondsAfterFinished``, counted from its Complete condition (the
status's time, so a restarted controller counts the same), while one with a longer TTL stays. No
JobSet controller runs: the test plays it by writing the JobSet's status.

``startTime`` is the JobSet's creation (it ran unsuspended from the start) and costs no status
write of its own: it comes with the JobSet's first report of its Jobs (``jobsStatus``), or alone
after ``reconcile.START_TIME_WAIT`` when no report comes."""

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


def _complete(kube: Client, name: str, namespace: str) -> str:
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    cond = {"type": "Completed", "status": "True", "reason": "AllJobsCompleted",
            "message": "jobset completed successfully", "lastTransitionTime": now}  # fmt: skip
    set_jobset_status(kube, name, namespace, {"conditions": [cond]})
    return now


def test_times_and_the_ttl_delete_a_finished_trainjob(
    kube: Client, controller: Controller, namespace: str
) -> None:
    kube.create(r.TRAINJOBS, trainjob("ttl", namespace, ttlSecondsAfterFinished=3))
    kube.create(r.TRAINJOBS, trainjob("stays", namespace, ttlSecondsAfterFinished=3600))
    created = {
        name: jobset_of(kube, name, namespace)["metadata"]["creationTimestamp"]
        for name in ("ttl", "stays")
    }
    # the JobSet controller's first report: the Jobs it made, none running yet
    jobs = [{"name": "node", "ready": 0, "succeeded": 0, "failed": 0, "active": 1, "suspended": 0}]
    set_jobset_status(kube, "ttl", namespace, {"replicatedJobsStatus": jobs})
    first = wait_for(
        lambda: (
            (s := kube.get(r.TRAINJOBS, "ttl", namespace).get("status") or {}).get("startTime")
            and s
        ),
        what="startTime",
    )
    started = first["startTime"]
    assert started == created["ttl"]
    assert first["jobsStatus"][0]["active"] == 1, "one status write carried both"
    # no report from the JobSet controller: startTime comes alone, a little later
    alone = wait_for(
        lambda: (kube.get(r.TRAINJOBS, "stays", namespace).get("status") or {}).get("startTime"),
        timeout=90,
        what="startTime without a JobSet report",
    )
    assert alone == created["stays"]
    done = _complete(kube, "ttl", namespace)
    _complete(kube, "stays", namespace)
    status = wait_for(
        lambda: (
            (s := kube.get(r.TRAINJOBS, "ttl", namespace).get("status") or {}).get("completionTime")
            and s
        ),
        what="completionTime",
    )
    assert started <= status["completionTime"] == done
    wait_for(
        lambda: kube.get_or_none(r.TRAINJOBS, "ttl", namespace) is None,
        timeout=30,
        what="the TrainJob deleted after its TTL",
    )
    assert kube.get(r.TRAINJOBS, "stays", namespace)["status"]["completionTime"]
