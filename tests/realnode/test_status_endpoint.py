"""A trainer process in a pod of the real node reports progress to the controller's TrainJob
status endpoint (KEP-2779) the way a trainer does (:mod:`trainjob.progress`: the URL, CA and
token from the TrainJobStatus plugin's env and projected volume, whose ``ca.crt`` comes from a
downward-API annotation only a kubelet can serve), and the TrainJob's ``status.trainerStatus``
carries it, as ``trainjob get jobs`` and the SDK (``TrainerClient.get_job``) show."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

from tests.integration.controller_harness import Controller, wait_for
from tests.realnode.conftest import RealCluster
from trainjob import KubernetesBackendConfig, TrainerClient
from trainjob.kube import resources as r

IMAGE = "localhost/trainjob/torch-trainer:dev"
TRAINJOBS = r.Resource("trainer.kubeflow.org", "v1alpha1", "trainjobs", "TrainJob")
REPORT = (
    "import sys\n"
    "from trainjob import progress\n"
    "ok = progress.update_trainjob_status(progress_percent=42, estimated_remaining_seconds=7,"
    " metrics={'loss': 0.5})\n"
    "print('reported', ok)\n"
    "sys.exit(0 if ok else 1)\n"
)


def test_trainer_reports_progress_from_its_pod(
    real_cluster: RealCluster, real_controller: Controller, real_ns: str
) -> None:
    job: dict[str, Any] = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": "report", "namespace": real_ns},
        "spec": {
            "runtimeRef": {"name": "torch-distributed"},
            "trainer": {
                "numNodes": 1,
                "image": IMAGE,
                "command": ["python", "-c", REPORT],
                "resourcesPerNode": {"requests": {"cpu": "100m"}},
            },
        },
    }
    real_cluster.kube.create(TRAINJOBS, job)

    def finished() -> dict[str, Any] | None:
        tj = real_cluster.kube.get(TRAINJOBS, "report", real_ns)
        conds = {c["type"]: c["status"] for c in tj.get("status", {}).get("conditions") or []}
        return tj if "True" in (conds.get("Complete"), conds.get("Failed")) else None

    tj = wait_for(finished, timeout=180, interval=1, what="TrainJob report finished")
    (pod,) = real_cluster.kube.list(r.PODS, real_ns)["items"]
    log = "\n".join(real_cluster.kube.logs(pod["metadata"]["name"], real_ns, container="node"))
    status = tj["status"]
    assert "reported True" in log, f"{log}\n{status}"
    trainer = status["trainerStatus"]
    assert trainer["progressPercentage"] == 42
    assert trainer["estimatedRemainingSeconds"] == 7
    assert {"name": "loss", "value": "0.5"} in trainer["metrics"]
    env = {**os.environ, "KUBECONFIG": str(real_cluster.kubeconfig)}
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "trainjob.cli",
            "--backend",
            "kubernetes",
            "get",
            "jobs",
            "-n",
            real_ns,
        ],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert "42%" in out.stdout, out.stdout
    client = TrainerClient(
        backend_config=KubernetesBackendConfig(
            config_file=str(real_cluster.kubeconfig), namespace=real_ns
        )
    )
    sdk = client.get_job("report").trainer_status
    assert sdk is not None and sdk.progress_percentage == 42
    assert sdk.metrics.get("loss") == "0.5"
