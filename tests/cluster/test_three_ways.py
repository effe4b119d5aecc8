"""The same TrainJob three ways (issue 14), its third way: the 2-node torch TrainJob of
tests/e2e/three_ways.py, submitted through the SDK with ``--backend kubernetes`` to the whole
simulated cluster, against its runs as processes and as containers of the torch-trainer image
(run once a session: tests/e2e/test_three_ways.py ran them earlier, or they run here).

KWOK runs no containers, so the cluster's side is what the controllers made of the job: the
steps and their statuses as the SDK reads them from the pods, each node's env from its pod's spec
(fieldRefs resolved from the pod as the kubelet would, e.g. ``PET_NODE_RANK`` from the Job's
completion index) and the TrainJob's conditions as trainjob's controller wrote them from the
JobSet's. Locally the env is what the trainer printed, and the conditions the local store's.
Each pair must agree (the process backend's endpoints mapped onto this host, as documented).
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

import pytest

from tests import containers
from tests.cluster import kit
from tests.e2e import three_ways
from tests.integration.controller_harness import wait_for
from trainjob import KubernetesBackendConfig, TrainerClient
from trainjob.kube import resources as r

if TYPE_CHECKING:
    from tests.cluster.conftest import Cluster

pytestmark = pytest.mark.usefixtures("controller")


@pytest.fixture(scope="module")
def on_the_cluster(cluster: Cluster) -> three_ways.Run:
    """The job's run on the cluster, in a namespace of its own, normalised as the local runs."""
    ns = f"three-ways-{uuid.uuid4().hex[:6]}"
    cluster.kube.create(
        r.NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}
    )
    try:
        wait_for(
            lambda: cluster.kube.get_or_none(r.SERVICE_ACCOUNTS, "default", ns),
            timeout=60,
            what=f"ServiceAccount {ns}/default",
        )
        client = TrainerClient(
            backend_config=KubernetesBackendConfig(
                config_file=str(cluster.kubeconfig), namespace=ns
            )
        )
        name = three_ways.submit(client, containers.tag("torch-trainer"))
        job = client.wait_for_job_status(
            name, status={"Complete", "Failed"}, timeout=180, polling_interval=1
        )
        trainjob = kit.get_trainjob(cluster.kube, name, ns)
        pods = kit.pods(cluster.kube, name, ns)
        assert job.status == "Complete", (trainjob.get("status"), [p["status"] for p in pods])
        assert len(pods) == 2, [p["metadata"]["name"] for p in pods]
        for pod in pods:  # the image the TrainJob named is the one each pod would run
            (ctr,) = (c for c in pod["spec"]["containers"] if c["name"] == "node")
            assert ctr["image"] == containers.tag("torch-trainer"), ctr["image"]
        run = three_ways.cluster_run(client, name, trainjob, pods)
        return run.normalised(name, mapped_endpoints=False)
    finally:
        cluster.kube.delete(r.NAMESPACES, ns, ignore_not_found=True)


def test_the_cluster_gives_the_steps_env_and_statuses_of_processes(
    on_the_cluster: three_ways.Run, tmp_path_factory: pytest.TempPathFactory
) -> None:
    process = three_ways.local_run("process", tmp_path_factory.mktemp("three-ways"))
    assert on_the_cluster == process
    assert on_the_cluster.steps == (("node-0", "Succeeded"), ("node-1", "Succeeded"))
    assert on_the_cluster.env["node-0"]["PET_NODE_RANK"] == "0"
    assert on_the_cluster.env["node-1"]["PET_NODE_RANK"] == "1"
    assert ("Complete", "True", "AllJobsCompleted") in on_the_cluster.conditions


def test_the_cluster_gives_the_steps_env_and_statuses_of_containers(
    on_the_cluster: three_ways.Run, tmp_path_factory: pytest.TempPathFactory
) -> None:
    container = three_ways.local_run("container", tmp_path_factory.mktemp("three-ways"))
    assert on_the_cluster == container
