"""trainjob's CLI and SDK with ``--backend kubernetes`` on the whole cluster: what they report
comes from a TrainJob that really ran (JobSet controller, Job controller, scheduler, KWOK), not
from status a test wrote.

KWOK serves no pod logs (no kubelet), so ``logs`` / ``get_job_logs`` are not exercised here:
following logs is pinned by the CLI's and the SDK's unit tests (``tests/unit``) and by the local
backend's end-to-end tests.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.cluster import kit
from tests.integration.controller_harness import wait_for
from trainjob import CustomTrainer, KubernetesBackendConfig, RuntimePatch, TrainerClient
from trainjob.client import options
from trainjob.kube import resources as r

if TYPE_CHECKING:
    from tests.cluster.conftest import Cluster

pytestmark = pytest.mark.usefixtures("controller")

JOB = """
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata:
  name: {name}
spec:
  runtimeRef:
    name: torch-distributed
  trainer:
    numNodes: 2
    command: [torchrun, train.py]
  runtimePatches:
  - manager: trainjob.tests/kwok
    trainingRuntimeSpec:
      template:
        spec:
          replicatedJobs:
          - name: node
            template:
              spec:
                template:
                  metadata:
                    annotations:
                      trainjob-testenv/outcome: {outcome}
"""


def cli(cluster: Cluster, ns: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "TRAINJOB_BACKEND")}
    env["TRAINJOB_HOME"] = str(cluster.logs / "cli-home")
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "trainjob.cli",
            "--backend",
            "kubernetes",
            "--kubeconfig",
            str(cluster.kubeconfig),
            *args,
            "-n",
            ns,
        ],
        capture_output=True,
        text=True,
        timeout=180,
        env=env,
        check=False,
    )


def rows(out: str) -> dict[str, list[str]]:
    lines = out.strip().splitlines()
    return {line.split()[0]: line.split() for line in lines[1:]}


def test_cli_runs_a_trainjob_on_the_cluster_and_reports_what_it_did(
    cluster: Cluster, ns: str, tmp_path: Path
) -> None:
    manifest = tmp_path / "job.yaml"
    manifest.write_text(JOB.format(name="cli-ddp", outcome="Running"))
    run = cli(cluster, ns, "run", "-f", str(manifest))
    assert run.returncode == 0, run.stderr
    assert "cli-ddp" in run.stdout
    wait_for(
        lambda: kit.phases(cluster.kube, "cli-ddp", ns) == ["Running", "Running"],
        what="pods Running",
    )
    got = cli(cluster, ns, "get", "jobs")
    assert got.returncode == 0, got.stderr
    assert got.stdout.splitlines()[0].split()[:2] == ["NAME", "STATUS"]
    assert rows(got.stdout)["cli-ddp"][1] == "Running", got.stdout
    described = cli(cluster, ns, "describe", "job", "cli-ddp")
    assert described.returncode == 0, described.stderr
    for pod in kit.pods(cluster.kube, "cli-ddp", ns):
        assert pod["metadata"]["name"] in described.stdout  # the steps are the real pods
    assert cli(cluster, ns, "suspend", "cli-ddp").returncode == 0
    wait_for(lambda: kit.pods(cluster.kube, "cli-ddp", ns) == [], timeout=60, what="pods gone")
    assert rows(cli(cluster, ns, "get", "jobs").stdout)["cli-ddp"][1] == "Suspended"
    assert cli(cluster, ns, "delete", "cli-ddp").returncode == 0
    wait_for(
        lambda: kit.jobset(cluster.kube, "cli-ddp", ns) is None, timeout=60, what="JobSet collected"
    )

    manifest.write_text(JOB.format(name="cli-wait", outcome="Succeeded"))
    waited = cli(cluster, ns, "run", "-f", str(manifest), "--wait")
    assert waited.returncode == 0, waited.stdout + waited.stderr
    assert rows(cli(cluster, ns, "get", "jobs").stdout)["cli-wait"][1] == "Complete"


def train_fn(epochs: int = 1) -> None:
    import torch.distributed as dist

    dist.init_process_group("gloo")
    print("epochs", epochs)


def test_the_sdk_trains_waits_lists_and_deletes_on_the_cluster(cluster: Cluster, ns: str) -> None:
    client = TrainerClient(
        backend_config=KubernetesBackendConfig(config_file=str(cluster.kubeconfig), namespace=ns)
    )
    runtime = client.get_runtime("torch-distributed")
    keep_running = RuntimePatch(
        training_runtime_spec=options.TrainingRuntimeSpecPatch(
            template=options.JobSetTemplatePatch(
                spec=options.JobSetSpecPatch(
                    replicated_jobs=[
                        options.ReplicatedJobPatch(
                            name="node",
                            template=options.JobTemplatePatch(
                                spec=options.JobSpecPatch(
                                    template=options.PodTemplatePatch(
                                        metadata={"annotations": {kit.RUN_FOR: kit.RUNNING}}
                                    )
                                )
                            ),
                        )
                    ]
                )
            )
        )
    )
    name = client.train(
        runtime=runtime,
        trainer=CustomTrainer(func=train_fn, func_args={"epochs": 2}, num_nodes=2),
        options=[keep_running],
    )
    running = client.wait_for_job_status(name, {"Running"}, timeout=120, polling_interval=1)
    assert running.status == "Running"
    assert [(s.name, s.status) for s in running.steps] == [
        ("node-0", "Running"),
        ("node-1", "Running"),
    ]
    assert running.num_nodes == 2
    done = client.wait_for_job_status(name, timeout=120, polling_interval=1)
    assert done.status == "Complete"
    assert [(s.name, s.status) for s in done.steps] == [
        ("node-0", "Succeeded"),
        ("node-1", "Succeeded"),
    ]
    assert name in [j.name for j in client.list_jobs()]
    assert client.get_job(name).status == "Complete"
    events = client.get_job_events(name)
    assert events, "the controllers' events about the TrainJob"
    client.delete_job(name)
    wait_for(
        lambda: cluster.kube.get_or_none(r.TRAINJOBS, name, ns) is None, what="TrainJob deleted"
    )
    wait_for(lambda: kit.pods(cluster.kube, name, ns) == [], timeout=60, what="its pods collected")
