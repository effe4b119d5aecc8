"""Suspend and resume on the real node (``trainjob --backend kubernetes suspend/resume``): the
running trainer pod really stops, and after resume a new pod runs the trainer to Complete."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

from tests.integration.controller_harness import Controller, wait_for
from tests.realnode.conftest import RealCluster
from trainjob.kube import resources as r

IMAGE = "localhost/trainjob/torch-trainer:dev"
TRAINJOBS = r.Resource("trainer.kubeflow.org", "v1alpha1", "trainjobs", "TrainJob")
SCRIPT = "import time\nprint('started', flush=True)\ntime.sleep(15)\nprint('done')\n"


def cli(cluster: RealCluster, *args: str) -> str:
    env = {**os.environ, "KUBECONFIG": str(cluster.kubeconfig)}
    out = subprocess.run(
        [sys.executable, "-m", "trainjob.cli", "--backend", "kubernetes", *args],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    return out.stdout


def conditions(cluster: RealCluster, ns: str) -> dict[str, str]:
    tj = cluster.kube.get(TRAINJOBS, "pausable", ns)
    return {c["type"]: c["status"] for c in tj.get("status", {}).get("conditions") or []}


def running_pod(cluster: RealCluster, ns: str) -> dict[str, Any] | None:
    items: list[dict[str, Any]] = cluster.kube.list(r.PODS, ns)["items"]
    for p in items:
        if p.get("status", {}).get("phase") == "Running" and "started" in "\n".join(
            cluster.kube.logs(p["metadata"]["name"], ns, container="node")
        ):
            return p
    return None


def test_suspend_stops_the_pod_and_resume_runs_it_again(
    real_cluster: RealCluster, real_controller: Controller, real_ns: str
) -> None:
    real_cluster.kube.create(
        TRAINJOBS,
        {
            "apiVersion": "trainer.kubeflow.org/v1alpha1",
            "kind": "TrainJob",
            "metadata": {"name": "pausable", "namespace": real_ns},
            "spec": {
                "runtimeRef": {"name": "torch-distributed"},
                "trainer": {
                    "numNodes": 1,
                    "image": IMAGE,
                    "command": ["python", "-c", SCRIPT],
                    "resourcesPerNode": {"requests": {"cpu": "100m"}},
                },
            },
        },
    )
    first = wait_for(lambda: running_pod(real_cluster, real_ns), timeout=180, what="trainer runs")
    cli(real_cluster, "suspend", "-n", real_ns, "pausable")
    wait_for(
        lambda: conditions(real_cluster, real_ns).get("Suspended") == "True",
        timeout=60,
        what="Suspended",
    )
    wait_for(
        lambda: not real_cluster.kube.list(r.PODS, real_ns)["items"],
        timeout=120,
        what="the trainer pod gone",
    )
    cli(real_cluster, "resume", "-n", real_ns, "pausable")
    wait_for(
        lambda: conditions(real_cluster, real_ns).get("Complete") == "True",
        timeout=240,
        interval=1,
        what="Complete after resume",
    )
    (second,) = real_cluster.kube.list(r.PODS, real_ns)["items"]
    assert second["metadata"]["uid"] != first["metadata"]["uid"]
    assert "done" in "\n".join(
        real_cluster.kube.logs(second["metadata"]["name"], real_ns, container="node")
    )
