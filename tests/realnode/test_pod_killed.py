"""A trainer pod killed mid-run on the real node: the Job makes a new pod, which resumes from the
checkpoint the killed one left on the TrainJob's volume (a PersistentVolumeClaim of the default
StorageClass, mounted through ``runtimePatches``) instead of starting over."""

from __future__ import annotations

import re
from typing import Any

from tests.integration.controller_harness import Controller, wait_for
from tests.realnode.conftest import RealCluster
from trainjob.kube import resources as r

IMAGE = "localhost/trainjob/torch-trainer:dev"
TRAINJOBS = r.Resource("trainer.kubeflow.org", "v1alpha1", "trainjobs", "TrainJob")
PVCS = r.Resource("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim")
STEPS = 20
SCRIPT = f"""import pathlib, time
ckpt = pathlib.Path('/ckpt/step')
step = int(ckpt.read_text()) if ckpt.exists() else 0
print('resumed at', step, flush=True)
while step < {STEPS}:
    time.sleep(1)
    step += 1
    ckpt.write_text(str(step))
    print('step', step, flush=True)
print('finished at', step)
"""


def volume_patch() -> dict[str, Any]:
    pod_spec = {
        "volumes": [{"name": "ckpt", "persistentVolumeClaim": {"claimName": "ckpt"}}],
        "securityContext": {"runAsUser": 0},  # the hostPath volume's directory is root's (0750)
        "containers": [{"name": "node", "volumeMounts": [{"name": "ckpt", "mountPath": "/ckpt"}]}],
    }
    job = {"name": "node", "template": {"spec": {"template": {"spec": pod_spec}}}}
    return {
        "manager": "trainjob.tests/realnode",
        "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": [job]}}},
    }


def pods(cluster: RealCluster, ns: str) -> list[dict[str, Any]]:
    return list(cluster.kube.list(r.PODS, ns)["items"])


def log(cluster: RealCluster, ns: str, p: dict[str, Any]) -> str:
    try:
        return "\n".join(cluster.kube.logs(p["metadata"]["name"], ns, container="node"))
    except Exception:  # not started yet
        return ""


def test_killed_pod_resumes_from_its_checkpoint(
    real_cluster: RealCluster, real_controller: Controller, real_ns: str
) -> None:
    real_cluster.kube.create(
        PVCS,
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": "ckpt", "namespace": real_ns},
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": "1Gi"}},
            },
        },
    )
    real_cluster.kube.create(
        TRAINJOBS,
        {
            "apiVersion": "trainer.kubeflow.org/v1alpha1",
            "kind": "TrainJob",
            "metadata": {"name": "resumable", "namespace": real_ns},
            "spec": {
                "runtimeRef": {"name": "torch-distributed"},
                "trainer": {
                    "numNodes": 1,
                    "image": IMAGE,
                    "command": ["python", "-c", SCRIPT],
                    "resourcesPerNode": {"requests": {"cpu": "100m"}},
                },
                "runtimePatches": [volume_patch()],
            },
        },
    )

    def midway() -> dict[str, Any] | None:
        for p in pods(real_cluster, real_ns):
            if "step 4" in log(real_cluster, real_ns, p):
                return p
        return None

    first = wait_for(midway, timeout=180, interval=0.5, what="the trainer at step 4")
    # killed, not stopped: no grace period, so the kubelet SIGKILLs the trainer at once
    real_cluster.kube.request(
        "DELETE",
        r.PODS.path(real_ns, first["metadata"]["name"]),
        body={"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0},
    )

    def complete() -> bool:
        tj = real_cluster.kube.get(TRAINJOBS, "resumable", real_ns)
        conds = {c["type"]: c["status"] for c in tj.get("status", {}).get("conditions") or []}
        assert conds.get("Failed") != "True", tj["status"]
        return conds.get("Complete") == "True"

    wait_for(complete, timeout=240, interval=1, what="Complete after the kill")
    (second,) = [
        p for p in pods(real_cluster, real_ns) if p["metadata"]["uid"] != first["metadata"]["uid"]
    ]
    text = log(real_cluster, real_ns, second)
    resumed = re.search(r"resumed at (\d+)", text)
    assert resumed and 4 <= int(resumed.group(1)) < STEPS, text
    assert f"finished at {STEPS}" in text
