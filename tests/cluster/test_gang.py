"""Gang scheduling with scheduler-plugins' Coscheduling: a TrainJob whose runtime asks for it
gets a PodGroup (trainjob's CoScheduling plugin: minMember = every pod, minResources = their
requests), its pods go to the ``scheduler-plugins-scheduler``, and none is bound until the whole
gang fits. The cluster's GPU nodes (``hack/testenv up --cluster``: 2 nodes of 2 GPUs) hold 4 GPUs;
the gang needs 6.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import pytest

from tests.cluster import kit
from tests.integration.controller_harness import builtin_runtime, wait_for
from trainjob.kube import resources as r

if TYPE_CHECKING:
    from tests.cluster.conftest import Cluster

pytestmark = pytest.mark.usefixtures("controller")
SCHEDULER = "scheduler-plugins-scheduler"
GPUS = {"nvidia.com/gpu": "2"}


def gpu_runtime(name: str, gang: bool) -> kit.Obj:
    def edit(rt: kit.Obj) -> None:
        if gang:
            rt["spec"]["podGroupPolicy"] = {"coscheduling": {"scheduleTimeoutSeconds": 120}}
            pod = kit.replicated_job(rt)["template"]["spec"]["template"]["spec"]
            pod["schedulerName"] = SCHEDULER

    return kit.runtime_from(builtin_runtime("torch-distributed"), name, edit)


@pytest.fixture(scope="module")
def runtimes(cluster: Cluster) -> None:
    cluster.require("scheduler-plugins")
    for name, gang in (("test-gang", True), ("test-no-gang", False)):
        cluster.kube.apply(gpu_runtime(name, gang), field_manager="trainjob-tests")


def bound(cluster: Cluster, name: str, ns: str) -> list[str]:
    return sorted(
        p["spec"].get("nodeName", "")
        for p in kit.pods(cluster.kube, name, ns)
        if p["spec"].get("nodeName")
    )


@pytest.mark.usefixtures("runtimes")
def test_nothing_is_scheduled_until_the_whole_gang_fits(cluster: Cluster, ns: str) -> None:
    kube = cluster.kube
    # Without gang scheduling the default scheduler binds what fits: 2 of the 3 pods.
    kube.create(
        r.TRAINJOBS,
        kit.trainjob(
            "greedy", "test-no-gang", num_nodes=3, resources=GPUS, pods={kit.OUTCOME: "Running"}
        ),
        ns,
    )
    wait_for(lambda: len(kit.pods(kube, "greedy", ns)) == 3, what="3 pods")
    wait_for(lambda: len(bound(cluster, "greedy", ns)) == 2, what="2 of 3 pods bound")
    kube.delete(r.TRAINJOBS, "greedy", ns)
    wait_for(lambda: kit.pods(kube, "greedy", ns) == [], timeout=60, what="the greedy pods gone")

    kube.create(r.TRAINJOBS, kit.trainjob("gang", "test-gang", num_nodes=3, resources=GPUS), ns)
    pg = wait_for(
        lambda: kube.get_or_none(r.COSCHEDULING_PODGROUPS, "gang", ns), what="the PodGroup"
    )
    assert pg["spec"]["minMember"] == 3
    assert pg["spec"]["minResources"]["nvidia.com/gpu"] == "6"
    wait_for(lambda: len(kit.pods(kube, "gang", ns)) == 3, what="3 gang pods")
    pods = kit.pods(kube, "gang", ns)
    assert {p["spec"]["schedulerName"] for p in pods} == {SCHEDULER}
    assert {p["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"] for p in pods} == {"gang"}
    # The default scheduler bound 2 of these within a second or two above; the gang stays whole.
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        assert bound(cluster, "gang", ns) == [], "a gang pod was bound before the gang fits"
        time.sleep(0.5)
    assert kit.phases(kube, "gang", ns) == ["Pending", "Pending", "Pending"]

    cluster.add_node("kwok-gpu-extra", gpus=2)
    try:
        wait_for(
            lambda: len(bound(cluster, "gang", ns)) == 3, timeout=120, what="the whole gang bound"
        )
        done = kit.wait_condition(kube, "gang", ns, "Complete", timeout=120)
        assert done["reason"] == "AllJobsCompleted"
    finally:
        kube.delete(r.TRAINJOBS, "gang", ns, ignore_not_found=True)
        wait_for(lambda: kit.pods(kube, "gang", ns) == [], timeout=60, what="the gang pods gone")
        cluster.remove_node("kwok-gpu-extra")
