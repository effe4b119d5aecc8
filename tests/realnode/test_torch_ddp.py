"""examples/torch-ddp.yaml really trained on Kubernetes: trainjob's controller compiles it to a
JobSet, the JobSet controller makes its Jobs, the real node runs both pods in
``localhost/trainjob/torch-trainer:dev``, torchrun's rendezvous finds node-0 through the
JobSet's headless service (CoreDNS), gloo all-reduces across the two pods, the TrainJob goes
Complete, and ``trainjob --backend kubernetes logs`` prints the loss from the kubelet.

Two changes to the example, both for this machine: the image (the runtime's is upstream's
pytorch/pytorch, which no registry here serves) with train.py mounted from a ConfigMap where the
example says the image must have it (``torch-ddp/train.py`` in its working directory), and a
smaller CPU request (the node is this 2-core machine: 2 pods x 2 CPUs do not fit)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from tests.integration.controller_harness import Controller, wait_for
from tests.realnode.conftest import RealCluster
from trainjob.kube import resources as r

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "torch-ddp.yaml"
IMAGE = "localhost/trainjob/torch-trainer:dev"
CONFIGMAPS = r.Resource("", "v1", "configmaps", "ConfigMap")
TRAINJOBS = r.Resource("trainer.kubeflow.org", "v1alpha1", "trainjobs", "TrainJob")


def example_on_this_node(ns: str) -> dict[str, Any]:
    job: dict[str, Any] = yaml.safe_load(EXAMPLE.read_text())
    job["metadata"]["namespace"] = ns
    trainer = job["spec"]["trainer"]
    trainer["image"] = IMAGE
    trainer["resourcesPerNode"] = {"requests": {"cpu": "500m"}}
    job["spec"]["runtimePatches"] = [
        {
            "manager": "trainjob.tests/realnode",
            "trainingRuntimeSpec": {
                "template": {
                    "spec": {
                        "replicatedJobs": [
                            {
                                "name": "node",
                                "template": {
                                    "spec": {
                                        "template": {
                                            "spec": {
                                                "volumes": [
                                                    {
                                                        "name": "example",
                                                        "configMap": {"name": "torch-ddp"},
                                                    }
                                                ],
                                                "containers": [
                                                    {
                                                        "name": "node",
                                                        "volumeMounts": [
                                                            {
                                                                "name": "example",
                                                                "mountPath": "/workspace/torch-ddp",
                                                            }
                                                        ],
                                                    }
                                                ],
                                            }
                                        }
                                    }
                                },
                            }
                        ]
                    }
                }
            },
        }
    ]
    return job


def condition(obj: dict[str, Any], kind: str) -> bool:
    return any(
        c["type"] == kind and c["status"] == "True"
        for c in obj.get("status", {}).get("conditions") or []
    )


def test_torch_ddp_example_trains_on_two_pods(
    real_cluster: RealCluster, real_controller: Controller, real_ns: str
) -> None:
    real_cluster.kube.create(
        CONFIGMAPS,
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "torch-ddp", "namespace": real_ns},
            "data": {"train.py": (REPO / "examples" / "torch-ddp" / "train.py").read_text()},
        },
    )
    real_cluster.kube.create(TRAINJOBS, example_on_this_node(real_ns))

    def done() -> dict[str, Any] | None:
        tj = real_cluster.kube.get(TRAINJOBS, "torch-ddp", real_ns)
        return tj if condition(tj, "Complete") or condition(tj, "Failed") else None

    tj = wait_for(done, timeout=600, interval=2, what="TrainJob torch-ddp Complete or Failed")
    pods = real_cluster.kube.list(r.PODS, real_ns)["items"]
    assert {p["spec"]["nodeName"] for p in pods} == {real_cluster.node}
    env = {**os.environ, "KUBECONFIG": str(real_cluster.kubeconfig)}
    cli = [sys.executable, "-m", "trainjob.cli", "--backend", "kubernetes", "logs", "-n", real_ns]
    out = subprocess.run(
        [*cli, "--all-steps", "torch-ddp"], env=env, capture_output=True, text=True, check=False
    )
    assert condition(tj, "Complete"), f"{tj['status']}\n{out.stdout}\n{out.stderr}"
    assert out.returncode == 0, out.stderr
    # every rank of the 2 pods x nproc all-reduced over gloo, and rank 0 printed the loss
    assert out.stdout.count("allreduce ok") >= 2, out.stdout
    assert "epoch 3/3 loss" in out.stdout, out.stdout
