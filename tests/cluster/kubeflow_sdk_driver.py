"""Upstream's Kubeflow SDK (``kubeflow`` 0.5.0, in a venv of its own) as a client of trainjob's
controller: run by ``tests/cluster/test_kubeflow_sdk.py`` with that venv's python, it drives
``kubeflow.trainer.TrainerClient`` through every call and writes what the SDK reported as JSON.

    python kubeflow_sdk_driver.py KUBECONFIG NAMESPACE OUT.json

Only the standard library and the ``kubeflow`` package are imported (not trainjob): the test
imports ``train_fn`` from here to ship the same function through trainjob's SDK and compare.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from typing import Any


def train_fn(lr: float = 0.1, epochs: int = 1) -> None:
    import torch.distributed as dist

    dist.init_process_group("gloo")
    print(f"rank {dist.get_rank()} lr {lr} epochs {epochs}")


def job_view(job: Any) -> dict[str, Any]:
    return {
        "name": job.name,
        "status": job.status,
        "num_nodes": job.num_nodes,
        "runtime": job.runtime.name,
        "steps": [[s.name, s.status, s.device, s.device_count] for s in job.steps],
    }


def main(kubeconfig: str, namespace: str, out_path: str) -> int:
    from kubeflow.trainer import (
        BuiltinTrainer,
        CustomTrainer,
        KubernetesBackendConfig,
        TorchTuneConfig,
        TrainerClient,
    )
    from kubeflow.trainer.options import (
        JobSetSpecPatch,
        JobSetTemplatePatch,
        JobSpecPatch,
        JobTemplatePatch,
        PodTemplatePatch,
        ReplicatedJobPatch,
        RuntimePatch,
        TrainingRuntimeSpecPatch,
    )

    warnings: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if record.levelno >= logging.WARNING:
                warnings.append(record.getMessage())

    logging.getLogger("kubeflow").addHandler(Keep())
    out: dict[str, Any] = {"calls": []}
    client = TrainerClient(
        backend_config=KubernetesBackendConfig(config_file=kubeconfig, namespace=namespace)
    )
    out["warnings_at_start"] = list(warnings)
    out["runtimes"] = sorted(rt.name for rt in client.list_runtimes())
    torch = client.get_runtime("torch-distributed")
    out["torch_runtime"] = {
        "num_nodes": torch.trainer.num_nodes,
        "device": torch.trainer.device,
        "device_count": torch.trainer.device_count,
    }

    # pods that stay Running for a while on KWOK (hack/kwok/pod-stages.yaml), so Running is seen
    # (25 s, as tests/cluster/kit.RUNNING: 6 s could end between two of a loaded machine's 1 s
    # polls, after the JobSet, Job and TrainJob controllers' lags)
    running_a_while = RuntimePatch(
        training_runtime_spec=TrainingRuntimeSpecPatch(
            template=JobSetTemplatePatch(
                spec=JobSetSpecPatch(
                    replicated_jobs=[
                        ReplicatedJobPatch(
                            name="node",
                            template=JobTemplatePatch(
                                spec=JobSpecPatch(
                                    template=PodTemplatePatch(
                                        metadata={
                                            "annotations": {"trainjob-testenv/run-for": "25s"}
                                        }
                                    )
                                )
                            ),
                        )
                    ]
                )
            )
        )
    )
    custom = client.train(
        runtime=torch,
        trainer=CustomTrainer(func=train_fn, func_args={"lr": 0.05, "epochs": 2}, num_nodes=2),
        options=[running_a_while],
    )
    out["custom"] = custom
    out["custom_created"] = job_view(client.get_job(custom))
    out["custom_running"] = job_view(
        client.wait_for_job_status(custom, {"Running"}, timeout=120, polling_interval=1)
    )
    out["custom_complete"] = job_view(
        client.wait_for_job_status(custom, timeout=120, polling_interval=1)
    )

    tune = client.get_runtime("torchtune-llama3.2-1b")
    builtin = client.train(
        runtime=tune,
        trainer=BuiltinTrainer(config=TorchTuneConfig(epochs=1, batch_size=2, num_nodes=1)),
    )
    out["builtin"] = builtin
    out["builtin_complete"] = job_view(
        client.wait_for_job_status(builtin, timeout=180, polling_interval=1)
    )

    out["listed"] = sorted([j.name, j.status] for j in client.list_jobs())
    client.delete_job(custom)
    client.delete_job(builtin)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and client.list_jobs():
        time.sleep(0.5)
    out["listed_after_delete"] = [j.name for j in client.list_jobs()]
    try:
        client.get_job(custom)
        out["get_deleted"] = "found"
    except RuntimeError as e:
        out["get_deleted"] = f"RuntimeError: {e}"
    out["warnings"] = warnings
    with open(out_path, "w") as f:
        json.dump(out, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:4]))
