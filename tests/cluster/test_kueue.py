"""Kueue admitting TrainJobs (Kueue's own TrainJob integration, ``trainer.kubeflow.org/trainjob``)
with trainjob's controller running them: Kueue's webhook suspends a TrainJob that names a
LocalQueue, its Workload waits for quota, Kueue unsuspends it through a ``runtimePatches`` entry of
its own, trainjob's controller runs it, and the next one is admitted when the first finishes.
A TrainJob ``spec.managedBy`` MultiKueue is left to MultiKueue: trainjob's controller makes nothing.

Kueue's TrainJob webhooks act in namespaces labelled ``trainjob-testenv/kueue=true``
(``hack/testenv up --kueue``); the ``kueue`` marker gives the test's namespace that label.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from tests.cluster import kit
from tests.integration.controller_harness import wait_for
from trainjob.kube import Client
from trainjob.kube import resources as r

if TYPE_CHECKING:
    from tests.cluster.conftest import Cluster

pytestmark = [pytest.mark.usefixtures("controller"), pytest.mark.kueue]
KUEUE = "kueue.x-k8s.io"
RESOURCE_FLAVORS = r.Resource(
    KUEUE, "v1beta2", "resourceflavors", "ResourceFlavor", namespaced=False
)
CLUSTER_QUEUES = r.Resource(KUEUE, "v1beta2", "clusterqueues", "ClusterQueue", namespaced=False)
LOCAL_QUEUES = r.Resource(KUEUE, "v1beta2", "localqueues", "LocalQueue")
WORKLOADS = r.Resource(KUEUE, "v1beta2", "workloads", "Workload")
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
KUEUE_PATCH_MANAGER = "kueue.x-k8s.io/manager"
MULTIKUEUE = "kueue.x-k8s.io/multikueue"


@pytest.fixture(autouse=True)
def kueue_runs(cluster: Cluster) -> None:
    cluster.require("kueue")


def queues(kube: Client, ns: str, cpu: str) -> None:
    """A ResourceFlavor, a ClusterQueue with ``cpu`` of quota, and LocalQueue ``lq`` in ``ns``."""
    cq = f"cq-{ns}"[:63]
    kube.apply(
        {
            "apiVersion": f"{KUEUE}/v1beta2",
            "kind": "ResourceFlavor",
            "metadata": {"name": "default"},
        },
        resource=RESOURCE_FLAVORS,
        field_manager="trainjob-tests",
    )
    kube.apply(
        {
            "apiVersion": f"{KUEUE}/v1beta2",
            "kind": "ClusterQueue",
            "metadata": {"name": cq},
            "spec": {
                "namespaceSelector": {},
                "resourceGroups": [
                    {
                        "coveredResources": ["cpu", "memory"],
                        "flavors": [
                            {
                                "name": "default",
                                "resources": [
                                    {"name": "cpu", "nominalQuota": cpu},
                                    {"name": "memory", "nominalQuota": "64Gi"},
                                ],
                            }
                        ],
                    }
                ],
            },
        },
        resource=CLUSTER_QUEUES,
        field_manager="trainjob-tests",
    )
    kube.apply(
        {
            "apiVersion": f"{KUEUE}/v1beta2",
            "kind": "LocalQueue",
            "metadata": {"name": "lq", "namespace": ns},
            "spec": {"clusterQueue": cq},
        },
        resource=LOCAL_QUEUES,
        field_manager="trainjob-tests",
    )

    def active() -> bool:
        lq = kube.get(LOCAL_QUEUES, "lq", ns)
        return kit.condition(lq, "Active") is not None

    wait_for(active, timeout=60, what="LocalQueue lq Active")


def workload_of(kube: Client, name: str, ns: str) -> kit.Obj | None:
    for wl in kube.list(WORKLOADS, ns).get("items") or []:
        for ref in wl["metadata"].get("ownerReferences") or []:
            if ref["kind"] == "TrainJob" and ref["name"] == name:
                return dict(wl)
    return None


def queued(name: str, cpu: str = "2") -> kit.Obj:
    return kit.trainjob(
        name,
        num_nodes=2,
        labels={QUEUE_LABEL: "lq"},
        resources={"cpu": cpu, "memory": "1Gi"},
        pods={kit.RUN_FOR: kit.RUNNING},
    )


def test_a_localqueue_admits_trainjobs_one_at_a_time_within_its_quota(
    cluster: Cluster, ns: str
) -> None:
    kube = cluster.kube
    queues(kube, ns, cpu="4")  # room for one 2-node job of 2 CPUs a node
    kube.create(r.TRAINJOBS, queued("first"), ns)
    first = kit.get_trainjob(kube, "first", ns)
    # Kueue's mutating webhook: suspended until admitted, with a runtimePatch of its own
    assert first["spec"]["suspend"] is True
    assert KUEUE_PATCH_MANAGER in [p["manager"] for p in first["spec"]["runtimePatches"]]
    wait_for(
        lambda: kit.condition(workload_of(kube, "first", ns), "Admitted"),
        timeout=60,
        what="first admitted",
    )
    wait_for(
        lambda: kit.get_trainjob(kube, "first", ns)["spec"]["suspend"] is False,
        what="first unsuspended",
    )
    wait_for(
        lambda: kit.phases(kube, "first", ns) == ["Running", "Running"],
        timeout=60,
        what="first running",
    )
    js = kit.jobset(kube, "first", ns)
    assert (
        js is not None and js["metadata"]["labels"][QUEUE_LABEL] == "lq"
    )  # Kueue's patch, applied

    kube.create(r.TRAINJOBS, queued("second"), ns)
    wl = wait_for(lambda: workload_of(kube, "second", ns), what="second's Workload")
    # no quota left while the first runs: the second waits, suspended, with no JobSet pods
    assert kit.condition(wl, "Admitted") is None
    assert kit.get_trainjob(kube, "second", ns)["spec"]["suspend"] is True
    assert kit.pods(kube, "second", ns) == []
    # trainjob's phase condition says why (trainjob.api.phases)
    held = wait_for(
        lambda: kit.condition(kit.get_trainjob(kube, "second", ns), "Queued"), what="Queued"
    )
    assert held["reason"] == "QueuedByKueue" and "(queue lq)" in held["message"], held

    assert kit.wait_condition(kube, "first", ns, "Complete")["reason"] == "AllJobsCompleted"
    wait_for(
        lambda: kit.condition(workload_of(kube, "first", ns), "Finished"),
        timeout=60,
        what="first Finished",
    )
    wait_for(
        lambda: kit.condition(workload_of(kube, "second", ns), "Admitted"),
        timeout=60,
        what="second admitted",
    )
    # right after Kueue's resume: Running (upstream shows only Suspended=False meanwhile)
    running = wait_for(
        lambda: kit.condition(kit.get_trainjob(kube, "second", ns), "Running"),
        timeout=60,
        what="second's Running condition",
    )
    assert running["reason"] == "AllTrainerPodsRunning", running
    assert kit.wait_condition(kube, "second", ns, "Complete")["reason"] == "AllJobsCompleted"
    types = [k["type"] for k in kit.get_trainjob(kube, "second", ns)["status"]["conditions"]]
    assert types == ["Suspended", "Complete"], "finished: upstream's conditions only"


def test_a_trainjob_managed_by_multikueue_is_left_to_it(cluster: Cluster, ns: str) -> None:
    kube = cluster.kube
    queues(kube, ns, cpu="8")
    left = queued("remote")
    left["spec"]["managedBy"] = MULTIKUEUE
    kube.create(r.TRAINJOBS, left, ns)
    kube.create(r.TRAINJOBS, queued("local"), ns)
    # trainjob's controller has reconciled this namespace (the local one runs) ...
    kit.wait_condition(kube, "local", ns, "Complete")
    # ... and left the MultiKueue one alone: no JobSet, no status of its own
    assert kit.jobset(kube, "remote", ns) is None
    remote = kit.get_trainjob(kube, "remote", ns)
    assert remote["spec"]["managedBy"] == MULTIKUEUE
    assert not [
        c
        for c in (remote.get("status") or {}).get("conditions") or []
        if c["type"] in ("Complete", "Failed")
    ]
