"""``TrainerClient.list_jobs`` and ``get_job`` latency on the local backend with 1,000 stored jobs.

The store is seeded through the executor's store API (``Store.insert_job`` / ``put_pods``) with
1,000 finished 2-node TrainJobs built by the SDK (real commands, compiled Plans), so no process
starts. A reference is measured in the same run: reading the same rows straight from the store
(``Store.jobs``), the floor any list must pay, so the ratio compares across machines.

    .venv/bin/python benchmarks/sdk.py [--jobs 1000] [--repeat 20] [--profile]

Target: ``list_jobs`` of 1,000 jobs in under 100 ms.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.e2e import sdk_funcs

from trainjob import CustomTrainer, LocalBackendConfig, TrainerClient
from trainjob.client import builder
from trainjob.local.state import store as st
from trainjob.runtime import compile

TARGET_MS = 100.0


def seed(client: TrainerClient, n: int) -> None:
    backend: Any = client.backend
    executor = backend.executor
    runtime = backend.get_runtime("torch-distributed")
    cr = executor.get_runtime("torch-distributed", "ClusterTrainingRuntime", None)
    store = executor.store
    t0 = time.time()
    for i in range(n):
        job = builder.build(
            runtime,
            trainer=CustomTrainer(
                func=sdk_funcs.ddp_all_reduce, num_nodes=2, resources_per_node={"cpu": 1}
            ),
            name=f"job-{i:05d}",
            namespace="default",
        )
        tj = builder.model(job)
        plan = compile(tj, cr)
        phase = ("Complete", "Failed", "Complete", "Complete")[i % 4]
        uid = f"uid-{i}"
        tj.metadata.uid = uid
        created = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t0 - n + i))
        tj.metadata.creation_timestamp = created
        cond = {
            "type": phase,
            "status": "True",
            "reason": "Done",
            "message": "",
            "lastTransitionTime": created,
        }
        store.insert_job(
            st.JobRow(
                namespace="default",
                name=tj.metadata.name or "",
                uid=uid,
                created=created,
                created_ts=t0 - n + i,
                trainjob=json.dumps(tj.to_dict()),
                runtime=json.dumps(cr.to_dict()),
                plan=json.dumps(list(plan.objects)),
                cwd="/tmp",
                phase=phase,
                status=json.dumps({"conditions": [cond]}),
                started=created,
                completed=created,
            )
        )
        pod_phase = "Succeeded" if phase == "Complete" else "Failed"
        store.put_pods(
            [
                st.PodRow(
                    namespace="default",
                    name=tj.metadata.name or "",
                    uid=uid,
                    job="node",
                    job_index=0,
                    idx=k,
                    pod_name=f"{tj.metadata.name}-node-0-{k}-abcde",
                    phase=pod_phase,
                    exit_code=0 if pod_phase == "Succeeded" else 1,
                    started=created,
                    finished=created,
                )
                for k in range(2)
            ]
        )


def timed(fn: Callable[[], Any], repeat: int) -> tuple[float, float, Any]:
    """(median ms, best ms, last result) of ``repeat`` calls."""
    times = []
    out = None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times), min(times), out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--profile", action="store_true")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as home:
        client = TrainerClient(LocalBackendConfig(home=Path(home)))
        t = time.perf_counter()
        seed(client, args.jobs)
        print(f"seeded {args.jobs} jobs in {time.perf_counter() - t:.1f}s")
        store = client.backend.executor.store  # type: ignore[attr-defined]
        ref_ms, ref_best, rows = timed(lambda: store.jobs("default"), args.repeat)
        list_ms, list_best, jobs = timed(client.list_jobs, args.repeat)
        assert len(jobs) == args.jobs and len(rows) == args.jobs
        assert {j.status for j in jobs} == {"Complete", "Failed"}
        assert all(len(j.steps) == 2 for j in jobs)
        get_ms, get_best, job = timed(
            lambda: client.get_job(f"job-{args.jobs // 2:05d}"), args.repeat * 5
        )
        assert job.status in ("Complete", "Failed")
        if args.profile:
            prof = cProfile.Profile()
            prof.runcall(client.list_jobs)
            pstats.Stats(prof).sort_stats("cumulative").print_stats(25)
    print(f"{'':34} median      best")
    print(f"reference  Store.jobs ({args.jobs} rows)   {ref_ms:8.1f} ms {ref_best:8.1f} ms")
    print(
        f"list_jobs  ({args.jobs} jobs)              {list_ms:8.1f} ms {list_best:8.1f} ms"
        f"  ({list_ms / ref_ms:.1f}x reference; target < {TARGET_MS:.0f} ms)"
    )
    print(f"get_job    (1 job of {args.jobs})          {get_ms:8.2f} ms {get_best:8.2f} ms")
    ok = list_ms < TARGET_MS
    print(
        "PASS" if ok else "FAIL",
        f"list_jobs of {args.jobs} {'<' if ok else '>='} {TARGET_MS:.0f} ms",
    )
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
