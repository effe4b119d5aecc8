"""TrainerClient's kubernetes backend against a real kube-apiserver (hack/testenv).

No controller runs, so each test plays the cluster where needed: it creates the pods a JobSet
would, and writes pod and TrainJob status, then checks what the SDK reports. The TrainJobs the
SDK posts must pass the real CRD schema and CEL rules.
"""

from __future__ import annotations

import copy
import threading
from typing import TYPE_CHECKING, Any

import pytest

from trainjob import CustomTrainer, KubernetesBackendConfig, Labels, TrainerClient
from trainjob.executor.catalog import builtin_runtimes

if TYPE_CHECKING:
    from tests.integration.conftest import ControlPlane

pytestmark = pytest.mark.integration

API = "/apis/trainer.kubeflow.org/v1alpha1"
MERGE = "application/merge-patch+json"


def train_fn(lr: float = 0.1) -> None:
    import os

    print("lr", lr, os.getpid())


@pytest.fixture
def client(control_plane: ControlPlane, namespace: str) -> TrainerClient:
    runtime = copy.deepcopy(builtin_runtimes()["torch-distributed"].to_dict())
    runtime["kind"] = "TrainingRuntime"
    runtime["metadata"] = {"name": "torch-distributed", "labels": runtime["metadata"]["labels"]}
    control_plane.create(f"{API}/namespaces/{namespace}/trainingruntimes", runtime)
    cfg = KubernetesBackendConfig(config_file=str(control_plane.kubeconfig), namespace=namespace)
    return TrainerClient(backend_config=cfg)


def node_pod(job: str, index: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{job}-node-0-{index}-x",
            "labels": {
                "jobset.sigs.k8s.io/jobset-name": job,
                "jobset.sigs.k8s.io/replicatedjob-name": "node",
                "batch.kubernetes.io/job-completion-index": str(index),
            },
        },
        "spec": {
            "containers": [
                {
                    "name": "node",
                    "image": "pytorch/pytorch",
                    "resources": {"limits": {"cpu": "1"}, "requests": {"cpu": "1"}},
                }
            ]
        },
    }


def test_runtimes_come_from_the_cluster(client: TrainerClient, namespace: str) -> None:
    names = {(r.name, r.kind.value) for r in client.list_runtimes()}
    assert ("torch-distributed", "TrainingRuntime") in names
    rt = client.get_runtime("torch-distributed")
    assert (rt.trainer.framework, rt.trainer.num_nodes) == ("torch", 1)


def test_a_trainjob_from_the_sdk_is_accepted_by_the_crd_and_reported_back(
    client: TrainerClient, control_plane: ControlPlane, namespace: str
) -> None:
    name = client.train(
        runtime="torch-distributed",
        trainer=CustomTrainer(
            func=train_fn,
            func_args={"lr": "$(id)"},
            num_nodes=2,
            resources_per_node={"cpu": 1},
            env={"A": "1"},
        ),
        options=[Labels({"team": "ml"})],
    )
    stored = control_plane.get(f"{API}/namespaces/{namespace}/trainjobs/{name}")
    assert stored["metadata"]["labels"] == {"team": "ml"}
    assert stored["spec"]["runtimeRef"]["kind"] == "TrainingRuntime"
    assert stored["spec"]["trainer"]["numNodes"] == 2
    assert stored["spec"]["trainer"]["command"][:2] == ["bash", "-c"]
    assert "'$(id)'" in stored["spec"]["trainer"]["command"][2]

    job = client.get_job(name)
    assert (job.status, job.num_nodes, job.steps) == ("Created", 2, [])
    assert [j.name for j in client.list_jobs()] == [name]

    for i in range(2):
        control_plane.create(f"/api/v1/namespaces/{namespace}/pods", node_pod(name, i))
    assert [(s.name, s.status) for s in client.get_job(name).steps] == [
        ("node-0", "Pending"),
        ("node-1", "Pending"),
    ]
    for i in range(2):
        control_plane.request(
            "PATCH",
            f"/api/v1/namespaces/{namespace}/pods/{name}-node-0-{i}-x/status",
            {"status": {"phase": "Running"}},
            content_type=MERGE,
        )
    job = client.get_job(name)
    assert job.status == "Running"
    assert [(s.name, s.status, s.device, s.device_count) for s in job.steps] == [
        ("node-0", "Running", "cpu", "1"),
        ("node-1", "Running", "cpu", "1"),
    ]

    control_plane.request(
        "PATCH",
        f"{API}/namespaces/{namespace}/trainjobs/{name}/status",
        {
            "status": {
                "conditions": [
                    {
                        "type": "Complete",
                        "status": "True",
                        "reason": "JobSetCompleted",
                        "message": "done",
                        "lastTransitionTime": "2025-01-01T00:00:00Z",
                    }
                ]
            }
        },
        content_type=MERGE,
    )
    assert client.wait_for_job_status(name, timeout=10, polling_interval=1).status == "Complete"

    control_plane.create(
        f"/api/v1/namespaces/{namespace}/events",
        {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": f"{name}.1"},
            "involvedObject": {"kind": "TrainJob", "name": name, "namespace": namespace},
            "reason": "Completed",
            "message": "TrainJob completed",
            "type": "Normal",
            "firstTimestamp": "2025-01-01T00:00:00Z",
            "lastTimestamp": "2025-01-01T00:00:00Z",
        },
    )
    events = client.get_job_events(name)
    assert [(e.involved_object_kind, e.reason) for e in events] == [("TrainJob", "Completed")]

    client.delete_job(name)
    assert not control_plane.exists(f"{API}/namespaces/{namespace}/trainjobs/{name}")
    with pytest.raises(RuntimeError, match="404"):
        client.get_job(name)


def test_a_failed_job_ends_waits_and_log_follows_at_once_and_is_listed_failed(
    client: TrainerClient, control_plane: ControlPlane, namespace: str
) -> None:
    name = client.train(runtime="torch-distributed", trainer=CustomTrainer(func=train_fn))
    control_plane.create(f"/api/v1/namespaces/{namespace}/pods", node_pod(name, 0))
    followed: list[list[str]] = []
    # follow waits while node-0 is Pending (no kubelet here: it never starts)
    follower = threading.Thread(
        target=lambda: followed.append(list(client.get_job_logs(name, follow=True)))
    )
    follower.start()
    follower.join(timeout=2.5)
    assert follower.is_alive() and followed == []

    control_plane.request(
        "PATCH",
        f"{API}/namespaces/{namespace}/trainjobs/{name}/status",
        {
            "status": {
                "conditions": [
                    {
                        "type": "Failed",
                        "status": "True",
                        "reason": "TrainJobFailed",
                        "message": "node-0 failed",
                        "lastTransitionTime": "2025-01-01T00:00:00Z",
                    }
                ]
            }
        },
        content_type=MERGE,
    )
    polls: list[str] = []
    # the error carries the Failed condition's message (upstream's controller writes no event)
    with pytest.raises(RuntimeError, match=f"^TrainJob {name} is Failed: node-0 failed$"):
        client.wait_for_job_status(name, timeout=300, callbacks=[lambda j: polls.append(j.status)])
    assert polls == ["Failed"]  # raised at the first poll, not after the 300 s timeout
    assert [(j.name, j.status) for j in client.list_jobs()] == [(name, "Failed")]
    follower.join(timeout=30)
    assert not follower.is_alive() and followed == [[]]  # the step never ran: no lines
