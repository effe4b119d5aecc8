"""A finished TrainJob's TTL survives a controller restart: the controller that counts it is not
the one that saw it finish. The count is the Complete condition's time in the TrainJob's status
(KEP-2899 as amended by kubeflow/trainer#3824), so the new controller deletes the TrainJob when
that time plus ``ttlSecondsAfterFinished`` comes, not a TTL after its own start. No JobSet
controller runs: the test plays it by writing the JobSet's status."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import pytest
from tests.integration.controller_harness import start_controller, trainjob, wait_for
from tests.integration.test_controller import jobset_of, set_jobset_status

from trainjob.core import times
from trainjob.kube import Client
from trainjob.kube import resources as r

if TYPE_CHECKING:
    from tests.integration.conftest import ControlPlane

pytest_plugins = ["tests.integration.controller_fixtures"]
pytestmark = pytest.mark.integration

# The first controller must be stopped before the TTL ends (else it deletes the TrainJob itself
# and "no controller ran" fails): its completionTime write and its stop take seconds on a loaded
# CI machine, so the TTL leaves it 20 s (10 was tight), and the second starts DOWN s after.
TTL = 20
DOWN = 12  # the controller is away from just after the completion until DOWN s later


def test_a_restarted_controller_deletes_a_finished_trainjob_on_time(
    control_plane: ControlPlane, kube: Client, torch_runtime: str, namespace: str
) -> None:
    first = start_controller(control_plane, webhooks=False)
    try:
        kube.create(r.TRAINJOBS, trainjob("ttl", namespace, ttlSecondsAfterFinished=TTL))
        jobset_of(kube, "ttl", namespace)
        done = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        cond = {"type": "Completed", "status": "True", "reason": "AllJobsCompleted",
                "message": "jobset completed successfully", "lastTransitionTime": done}  # fmt: skip
        set_jobset_status(kube, "ttl", namespace, {"conditions": [cond]})
        wait_for(
            lambda: (kube.get(r.TRAINJOBS, "ttl", namespace).get("status") or {}).get(
                "completionTime"
            ),
            what="completionTime written by the first controller",
        )
    finally:
        assert first.stop() == 0, first.log()[-3000:]
    finished = times.parse(done)
    assert finished is not None
    time.sleep(max(0.0, finished + DOWN - time.time()))
    assert kube.get_or_none(r.TRAINJOBS, "ttl", namespace) is not None, "no controller ran"
    second = start_controller(control_plane, webhooks=False)
    try:
        started = time.time()
        wait_for(
            lambda: kube.get_or_none(r.TRAINJOBS, "ttl", namespace) is None,
            timeout=TTL + 10,
            interval=0.2,
            what="the TrainJob deleted by the second controller",
        )
        deleted = time.time()
    finally:
        assert second.stop() == 0, second.log()[-3000:]
    # on time: its Complete time + TTL (the status's second, so up to 1 s early), not TTL after
    # the second controller started (which would be >= finished + DOWN + TTL)
    assert finished + TTL - 1 <= deleted < started + TTL - 2, (finished, started, deleted)
