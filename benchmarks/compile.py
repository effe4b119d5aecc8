"""How many TrainJobs the compiler turns into Plans per second, on one core.

Two workloads: a TorchTune runtime with three jobs (dataset and model initializers, trainer) and
the MPI runtime (launcher + nodes, SSH Secret and hostfile ConfigMap), each with a TrainJob that
sets what users set (initializers, trainer args, resources, env). ``compile`` includes validation,
as the controller and the webhook run it. A reference is measured in the same run on the same
runtime dict (a JSON round trip, and ``copy.deepcopy``), so the ratios compare across machines.

    .venv/bin/python benchmarks/compile.py [--seconds 3] [--profile]

The target is 2,000 compiles per second per core (the controller reconciling, the webhook
admitting, ``trainjob plan`` on big batches all stay far from being CPU-bound).
"""

from __future__ import annotations

import argparse
import copy
import cProfile
import json
import os
import pstats
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from trainjob.api.load import load_file, parse
from trainjob.api.trainer import ClusterTrainingRuntime, TrainJob
from trainjob.runtime import compile

TARGET = 2_000
RUNTIMES = Path(__file__).resolve().parents[1] / "manifests" / "runtimes"

TORCHTUNE_TRAINJOB: dict[str, Any] = {
    "apiVersion": "trainer.kubeflow.org/v1alpha1",
    "kind": "TrainJob",
    "metadata": {"name": "llama-lora", "namespace": "team-a", "uid": "0b6c3f1e"},
    "spec": {
        "runtimeRef": {"name": "torchtune-llama3.2-1b"},
        "initializer": {
            "dataset": {"storageUri": "hf://tatsu-lab/alpaca/data"},
            "model": {
                "storageUri": "hf://meta-llama/Llama-3.2-1B-Instruct",
                "env": [{"name": "ACCESS_TOKEN", "value": "hf_xxx"}],
            },
        },
        "trainer": {
            "command": ["tune", "run"],
            "args": ["batch_size=4", "epochs=2", "model.lora_attn_modules=[q_proj,v_proj]"],
            "numNodes": 1,
            "resourcesPerNode": {"limits": {"nvidia.com/gpu": 2, "cpu": 8, "memory": "64Gi"}},
        },
    },
}
MPI_TRAINJOB: dict[str, Any] = {
    "apiVersion": "trainer.kubeflow.org/v1alpha1",
    "kind": "TrainJob",
    "metadata": {"name": "pi", "namespace": "team-a", "uid": "5d1e2a90"},
    "spec": {
        "runtimeRef": {"name": "mpi-distributed"},
        "trainer": {
            "numNodes": 4,
            "numProcPerNode": 2,
            "env": [{"name": "OMP_NUM_THREADS", "value": "1"}],
            "resourcesPerNode": {"requests": {"cpu": 2, "memory": "4Gi"}},
        },
    },
}


def _node_job(name: str, ancestor: str | None, image: str, **pod: Any) -> dict[str, Any]:
    rjob: dict[str, Any] = {
        "name": name,
        "template": {
            "spec": {
                "template": {
                    "spec": {
                        "containers": [
                            {"name": name if name != "launcher" else "node", "image": image}
                        ],
                        **pod,
                    }
                }
            }
        },
    }
    if ancestor:
        rjob["template"]["metadata"] = {
            "labels": {"trainer.kubeflow.org/trainjob-ancestor-step": ancestor}
        }
    return rjob


def _inline_runtime(
    name: str, policy: dict[str, Any], jobs: list[dict[str, Any]]
) -> dict[str, Any]:
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "ClusterTrainingRuntime",
        "metadata": {"name": name},
        "spec": {"mlPolicy": policy, "template": {"spec": {"replicatedJobs": jobs}}},
    }


def _initializer_job(kind: str) -> dict[str, Any]:
    job = _node_job(kind, kind, f"ghcr.io/kubeflow/trainer/{kind}")
    ctr = job["template"]["spec"]["template"]["spec"]["containers"][0]
    ctr["volumeMounts"] = [{"name": "initializer", "mountPath": "/workspace"}]
    return job


def runtime(names: list[str], inline: dict[str, Any]) -> ClusterTrainingRuntime:
    """The first built-in runtime of ``names`` that exists, else ``inline`` (same shape)."""
    for name in names:
        path = RUNTIMES / f"{name}.yaml"
        if path.exists():
            (rt,) = load_file(path)
            assert isinstance(rt, ClusterTrainingRuntime)
            return rt
    rt = parse(inline)
    assert isinstance(rt, ClusterTrainingRuntime)
    return rt


def workloads() -> list[tuple[str, TrainJob, ClusterTrainingRuntime]]:
    tune = runtime(
        ["torchtune-llama3.2-1b"],
        _inline_runtime(
            "torchtune-llama3.2-1b",
            {"numNodes": 1, "torch": {}},
            [
                _initializer_job("dataset-initializer"),
                _initializer_job("model-initializer"),
                _node_job("node", "trainer", "ghcr.io/kubeflow/trainer/torchtune-trainer"),
            ],
        ),
    )
    mpi = runtime(
        ["mpi-distributed", "deepspeed-distributed"],
        _inline_runtime(
            "mpi-distributed",
            {"numNodes": 1, "mpi": {"numProcPerNode": 1, "runLauncherAsNode": True}},
            [
                _node_job("launcher", "trainer", "mpioperator/mpi-pi:openmpi"),
                _node_job("node", None, "mpioperator/mpi-pi:openmpi"),
            ],
        ),
    )
    out = []
    for doc, rt in ((TORCHTUNE_TRAINJOB, tune), (MPI_TRAINJOB, mpi)):
        doc = copy.deepcopy(doc)
        doc["spec"]["runtimeRef"]["name"] = rt.metadata.name
        tj = parse(doc)
        assert isinstance(tj, TrainJob)
        jobs = len(rt.spec.template.spec.replicated_jobs or [])
        out.append((f"compile {rt.metadata.name} ({jobs} jobs)", tj, rt))
    return out


def per_second(fn: Callable[[], object], seconds: float, rounds: int = 5) -> float:
    """Calls per second: the best of ``rounds`` timed batches (the least disturbed by neighbours)."""
    fn()
    n = 1
    while True:  # a batch long enough to time well
        start = time.perf_counter()
        for _ in range(n):
            fn()
        elapsed = time.perf_counter() - start
        if elapsed >= seconds / rounds / 4:
            break
        n *= 2
    batch = max(1, int(n * (seconds / rounds) / elapsed))
    best = 0.0
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(batch):
            fn()
        best = max(best, batch / (time.perf_counter() - start))
    return best


def pin_to_one_core() -> str:
    if hasattr(os, "sched_setaffinity"):
        cpu = min(os.sched_getaffinity(0))
        os.sched_setaffinity(0, {cpu})
        return f"pinned to CPU {cpu}"
    return "not pinned (no sched_setaffinity here)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=3.0, help="time per measurement")
    parser.add_argument("--profile", action="store_true", help="cProfile the compiles too")
    args = parser.parse_args()
    print(f"compile benchmark, one core ({pin_to_one_core()}), best of 5 batches")

    cases = workloads()
    reference_doc = cases[0][2].to_dict()
    ref_json = per_second(lambda: json.loads(json.dumps(reference_doc)), args.seconds)
    ref_copy = per_second(lambda: copy.deepcopy(reference_doc), args.seconds)
    rows: list[tuple[str, float]] = [
        (f"reference: JSON round trip of {cases[0][2].metadata.name}", ref_json),
        (f"reference: copy.deepcopy of {cases[0][2].metadata.name}", ref_copy),
    ]
    rates = []
    for label, tj, rt in cases:
        rate = per_second(lambda tj=tj, rt=rt: compile(tj, rt), args.seconds)
        rates.append(rate)
        rows.append((label, rate))
    width = max(len(label) for label, _ in rows)
    print(f"{'':{width}}  {'per second':>11}  {'vs JSON':>8}  {'vs deepcopy':>11}")
    for label, rate in rows:
        print(f"{label:{width}}  {rate:11,.0f}  {rate / ref_json:8.3f}  {rate / ref_copy:11.3f}")
    slowest = min(rates)
    verdict = "met" if slowest >= TARGET else "NOT met"
    print(f"target {TARGET:,} compiles/s per core: {verdict} (slowest workload {slowest:,.0f}/s)")

    if args.profile:
        profiler = cProfile.Profile()
        profiler.enable()
        for _ in range(500):
            for _, tj, rt in cases:
                compile(tj, rt)
        profiler.disable()
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(30)


if __name__ == "__main__":
    main()
