"""``hack/testenv up --cluster`` itself: the components run, the fake nodes are Ready with CPU and
GPU capacity, the real controllers act (ServiceAccounts, namespace deletion, Jobs, scheduling),
the KWOK pod stages follow the pod annotations, and the webhooks are served on loopback."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests.cluster import kit
from tests.cluster.conftest import NODES
from tests.integration.controller_harness import wait_for
from trainjob.kube import resources as r

if TYPE_CHECKING:
    from tests.cluster.conftest import Cluster

REPO = Path(__file__).resolve().parents[2]


def bare_pod(name: str, annotations: dict[str, str], gpus: int = 0) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "c", "image": "busybox"}
    if gpus:
        container["resources"] = {"limits": {"nvidia.com/gpu": str(gpus)}}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "annotations": annotations},
        "spec": {"containers": [container], "restartPolicy": "Never"},
    }


def phase(cluster: Cluster, name: str, ns: str) -> str:
    return str((cluster.kube.get(r.PODS, name, ns).get("status") or {}).get("phase", ""))


def test_every_component_runs_and_status_says_so(cluster: Cluster) -> None:
    env = cluster.plane.env
    components = list(env["cluster"]["components"])
    assert components[:4] == ["kube-controller-manager", "kube-scheduler", "kwok", "jobset"]
    assert set(components[4:]) <= {"kueue", "scheduler-plugins"}
    res = subprocess.run(
        [str(REPO / "hack" / "testenv"), "status", "--state-dir", str(cluster.plane.state_dir)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert res.returncode == 0, res.stdout + res.stderr
    assert "running: ok" in res.stdout
    assert f"cluster: {', '.join(components)}" in res.stdout


def test_the_fake_nodes_are_ready_with_cpu_and_gpu_capacity(cluster: Cluster) -> None:
    nodes = {n["metadata"]["name"]: n for n in cluster.kube.list(NODES).get("items") or []}
    assert {"kwok-cpu-0", "kwok-cpu-1", "kwok-gpu-0", "kwok-gpu-1"} <= set(nodes)
    for name in ("kwok-cpu-0", "kwok-cpu-1", "kwok-gpu-0", "kwok-gpu-1"):
        node = nodes[name]
        assert kit.condition(node, "Ready") is not None, node["status"]
        assert node["status"]["allocatable"]["cpu"] == "16"
        gpus = node["status"]["allocatable"].get("nvidia.com/gpu")
        assert gpus == ("2" if "gpu" in name else None)
        assert node["metadata"]["labels"]["trainjob-testenv/pool"] == (
            "gpu" if "gpu" in name else "cpu"
        )


def test_pods_run_and_end_as_their_annotations_say(cluster: Cluster, ns: str) -> None:
    kube = cluster.kube
    kube.create(r.PODS, bare_pod("ok", {kit.RUN_FOR: kit.RUNNING}), ns)
    kube.create(
        r.PODS, bare_pod("bad", {kit.OUTCOME: "Failed", "trainjob-testenv/exit-code": "3"}), ns
    )
    kube.create(r.PODS, bare_pod("forever", {kit.OUTCOME: "Running"}, gpus=1), ns)
    wait_for(lambda: phase(cluster, "ok", ns) == "Running", what="ok Running")
    ok = kube.get(r.PODS, "ok", ns)
    assert ok["spec"]["nodeName"].startswith("kwok-")  # bound by kube-scheduler
    assert ok["status"]["podIP"].startswith("10.244.")
    wait_for(lambda: phase(cluster, "ok", ns) == "Succeeded", timeout=120, what="ok Succeeded")
    wait_for(lambda: phase(cluster, "bad", ns) == "Failed", what="bad Failed")
    (state,) = kube.get(r.PODS, "bad", ns)["status"]["containerStatuses"]
    assert state["state"]["terminated"]["exitCode"] == 3
    wait_for(lambda: phase(cluster, "forever", ns) == "Running", what="forever Running")
    assert kube.get(r.PODS, "forever", ns)["spec"]["nodeName"].startswith("kwok-gpu-")
    kube.delete(r.PODS, "forever", ns)
    wait_for(lambda: kube.get_or_none(r.PODS, "forever", ns) is None, what="the deleted pod gone")


def test_namespaces_get_their_serviceaccount_and_really_go_away(cluster: Cluster) -> None:
    kube = cluster.kube
    kube.create(
        r.NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "short-lived"}}
    )
    wait_for(
        lambda: kube.get_or_none(r.SERVICE_ACCOUNTS, "default", "short-lived"), what="default SA"
    )
    wait_for(
        lambda: kube.get_or_none(r.CONFIGMAPS, "kube-root-ca.crt", "short-lived"), what="root CA"
    )
    kube.create(r.PODS, bare_pod("p", {kit.OUTCOME: "Running"}), "short-lived")
    kube.delete(r.NAMESPACES, "short-lived")
    wait_for(
        lambda: kube.get_or_none(r.NAMESPACES, "short-lived") is None,
        timeout=120,
        what="namespace gone",
    )


@pytest.mark.parametrize(
    ("config", "owner"),
    [
        ("jobset-mutating-webhook-configuration", "jobset"),
        ("jobset-validating-webhook-configuration", "jobset"),
        ("kueue-mutating-webhook-configuration", "kueue"),
        ("kueue-validating-webhook-configuration", "kueue"),
    ],
)
def test_the_controllers_webhooks_are_served_on_loopback(
    cluster: Cluster, config: str, owner: str
) -> None:
    cluster.require(owner)
    kind = (
        r.MUTATING_WEBHOOK_CONFIGURATIONS
        if "mutating" in config
        else r.VALIDATING_WEBHOOK_CONFIGURATIONS
    )
    hooks = cluster.kube.get(kind, config)["webhooks"]
    port = cluster.plane.env["ports"][f"{owner}/webhook"]
    assert hooks
    for hook in hooks:
        assert hook["clientConfig"]["url"].startswith(f"https://127.0.0.1:{port}/"), hook
        assert hook["clientConfig"]["caBundle"]


def test_the_jobset_webhook_really_answers(cluster: Cluster, ns: str) -> None:
    bad = {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": "bad"},
        "spec": {
            "replicatedJobs": [
                {
                    "name": "a" * 60,  # JobSet's webhook: too long for the pods' names
                    "replicas": 1,
                    "template": {
                        "spec": {
                            "template": {
                                "spec": {
                                    "restartPolicy": "Never",
                                    "containers": [{"name": "c", "image": "busybox"}],
                                }
                            }
                        }
                    },
                }
            ]
        },
    }
    with pytest.raises(Exception, match="admission webhook"):
        cluster.kube.create(r.JOBSETS, bad, ns)
