"""The controller under a burst: 500 TrainJobs created at once on a real kube-apiserver.

Measured in one run:

* **controller**: ``trainjob controller`` (a subprocess, admission webhooks on loopback unless
  ``--no-webhooks``) and 500 TrainJobs on the built-in ``torch-distributed`` runtime created by 32
  client threads at once. Per job: the time from its create call returning to its JobSet appearing
  on a watch; the time until every JobSet exists; the controller's peak and final RSS and CPU time.
* **reference**: the same 500 JobSets (the Plans the compiler makes) created directly by the same
  32 client threads, without TrainJobs or a controller: what the apiserver itself allows on this
  machine. The ratio of the two totals compares across machines.

    .venv/bin/python benchmarks/controller.py [--jobs 500] [--workers 5] [--kubeconfig KC]

Without ``--kubeconfig`` a private control plane is started with ``hack/testenv`` (built by
``hack/build-control-plane.sh`` when not cached) and stopped at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import yaml

from trainjob.api.load import parse
from trainjob.controller.http import free_port
from trainjob.kube import Client
from trainjob.kube import resources as r
from trainjob.runtime import compile

REPO = Path(__file__).resolve().parents[1]
Obj = dict[str, Any]


def start_testenv() -> tuple[Path, Path]:
    state = Path(tempfile.mkdtemp(prefix="trainjob-bench-"))
    kc = state / "kubeconfig"
    env = {**os.environ, "TRAINJOB_TESTENV_DIR": str(state / "cp")}
    env.pop("KUBECONFIG", None)
    subprocess.run(
        [str(REPO / "hack" / "testenv"), "up", "--kubeconfig", str(kc)],
        check=True,
        env=env,
        stdout=subprocess.DEVNULL,
    )
    return state, kc


def stop_testenv(state: Path) -> None:
    env = {**os.environ, "TRAINJOB_TESTENV_DIR": str(state / "cp")}
    subprocess.run([str(REPO / "hack" / "testenv"), "down"], env=env, stdout=subprocess.DEVNULL)


def proc_stats(pid: int) -> dict[str, float]:
    """Peak and current RSS (MiB) and CPU seconds of a process, from /proc."""
    out: dict[str, float] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmHWM", "VmRSS"):
            out[key] = int(value.split()[0]) / 1024
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    out["cpu"] = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return out


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    k = min(len(ordered) - 1, max(0, round(p / 100 * (len(ordered) - 1))))
    return ordered[k]


class JobSetWatcher:
    """Records when each JobSet of a namespace is first seen on a watch."""

    def __init__(self, kube: Client, namespace: str) -> None:
        self.seen: dict[str, float] = {}
        self.done = threading.Event()
        _, rv = kube.list_all(r.JOBSETS, namespace)
        self.watch = kube.watch(r.JOBSETS, namespace, resource_version=rv, metadata_only=True)
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        for event in self.watch:
            if event.type == "ADDED":
                self.seen.setdefault(event.object["metadata"]["name"], time.monotonic())

    def stop(self) -> None:
        self.watch.stop()


def trainjob(name: str, namespace: str) -> Obj:
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "runtimeRef": {"name": "torch-distributed"},
            "trainer": {"numNodes": 2, "command": ["torchrun", "train.py"]},
        },
    }


def burst(kube: Client, objects: list[Obj], resource: r.Resource, threads: int) -> dict[str, float]:
    """Create ``objects`` from ``threads`` threads at once; name -> time its create returned."""
    created: dict[str, float] = {}

    def create(obj: Obj) -> None:
        kube.create(resource, obj)
        created[obj["metadata"]["name"]] = time.monotonic()

    with ThreadPoolExecutor(threads) as pool:
        for f in [pool.submit(create, o) for o in objects]:
            f.result()
    return created


def wait_all(watcher: JobSetWatcher, n: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while len(watcher.seen) < n:
        if time.monotonic() > deadline:
            raise SystemExit(f"only {len(watcher.seen)}/{n} JobSets after {timeout}s")
        time.sleep(0.05)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=500)
    ap.add_argument("--workers", type=int, default=5, help="controller --workers")
    ap.add_argument("--threads", type=int, default=32, help="client threads creating objects")
    ap.add_argument("--kubeconfig", help="use this cluster instead of a private hack/testenv")
    ap.add_argument("--no-webhooks", action="store_true")
    ap.add_argument("--timeout", type=float, default=900)
    args = ap.parse_args()

    state = None
    kubeconfig = args.kubeconfig
    if kubeconfig is None:
        print("starting a private control plane (hack/testenv) ...", flush=True)
        state, kc = start_testenv()
        kubeconfig = str(kc)
    kube = Client.from_config(kubeconfig, max_connections=args.threads + 8)
    ns = f"bench-{uuid.uuid4().hex[:6]}"
    ref_ns = ns + "-ref"
    ctl = None
    try:
        for n in (ns, ref_ns):
            kube.create(
                r.NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}}
            )
        runtime_doc = yaml.safe_load(
            (REPO / "manifests/runtimes/torch-distributed.yaml").read_text()
        )
        kube.apply(runtime_doc, field_manager="trainjob-bench")

        # Reference: the same JobSets, created directly.
        runtime = parse(runtime_doc)
        ref_jobsets = []
        for i in range(args.jobs):
            tj = trainjob(f"job-{i:04d}", ref_ns)
            tj["metadata"]["uid"] = str(uuid.uuid4())
            js = compile(parse(tj), runtime).jobset  # type: ignore[arg-type]
            js["metadata"].pop("ownerReferences", None)
            ref_jobsets.append(js)
        watcher = JobSetWatcher(kube, ref_ns)
        t0 = time.monotonic()
        burst(kube, ref_jobsets, r.JOBSETS, args.threads)
        wait_all(watcher, args.jobs, args.timeout)
        ref_total = max(watcher.seen.values()) - t0
        watcher.stop()

        # The controller.
        metrics_port, health_port = free_port(), free_port()
        cmd = [
            sys.executable, "-c", "import sys; from trainjob.cli import main; sys.exit(main())",
            "controller", "--kubeconfig", kubeconfig, "--no-leader-elect",
            "--workers", str(args.workers), "--bind-host", "127.0.0.1",
            "--metrics-port", str(metrics_port), "--health-port", str(health_port),
            "--log-level", "WARNING",
        ]  # fmt: skip
        if not args.no_webhooks:
            cmd += ["--self-signed-webhooks", "--webhook-host", "127.0.0.1", "--webhook-port", "0"]
        log = open(Path(tempfile.gettempdir()) / f"trainjob-bench-controller-{ns}.log", "wb")  # noqa: SIM115
        ctl = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=REPO)
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{health_port}/readyz", timeout=2):
                    break
            except OSError:
                if time.monotonic() > deadline or ctl.poll() is not None:
                    raise SystemExit(f"controller not ready; see {log.name}") from None
                time.sleep(0.2)
        idle = proc_stats(ctl.pid)
        watcher = JobSetWatcher(kube, ns)
        t0 = time.monotonic()
        created = burst(
            kube,
            [trainjob(f"job-{i:04d}", ns) for i in range(args.jobs)],
            r.TRAINJOBS,
            args.threads,
        )
        create_total = max(created.values()) - t0
        wait_all(watcher, args.jobs, args.timeout)
        total = max(watcher.seen.values()) - t0
        watcher.stop()
        time.sleep(1)
        stats = proc_stats(ctl.pid)
        latencies = [watcher.seen[n] - created[n] for n in created]

        print()
        print(f"controller.py: {args.jobs} TrainJobs at once, {args.threads} client threads, "
              f"controller --workers {args.workers}, webhooks {'off' if args.no_webhooks else 'on'}")  # fmt: skip
        rows = [
            ("creating the TrainJobs (client side)", f"{create_total:.2f} s"),
            ("every JobSet exists", f"{total:.2f} s  ({args.jobs / total:.0f} TrainJobs/s)"),
            ("per job, create -> JobSet: p50", f"{statistics.median(latencies) * 1000:.0f} ms"),
            ("per job, create -> JobSet: p99", f"{percentile(latencies, 99) * 1000:.0f} ms"),
            ("per job, create -> JobSet: max", f"{max(latencies) * 1000:.0f} ms"),
            ("controller RSS idle / after / peak",
             f"{idle['VmRSS']:.0f} / {stats['VmRSS']:.0f} / {stats['VmHWM']:.0f} MiB"),
            ("controller CPU for the burst", f"{stats['cpu'] - idle['cpu']:.1f} s"),
            ("reference: the JobSets created directly", f"{ref_total:.2f} s"),
            ("controller total / reference", f"{total / ref_total:.2f}x"),
        ]  # fmt: skip
        width = max(len(k) for k, _ in rows)
        for k, v in rows:
            print(f"  {k:<{width}}  {v}")
        print(json.dumps({
            "jobs": args.jobs, "total_s": round(total, 3), "p50_ms": round(statistics.median(latencies) * 1000, 1),
            "p99_ms": round(percentile(latencies, 99) * 1000, 1), "rss_peak_mib": round(stats["VmHWM"], 1),
            "reference_s": round(ref_total, 3),
        }))  # fmt: skip
    finally:
        if ctl is not None:
            ctl.terminate()
            try:
                ctl.wait(20)
            except subprocess.TimeoutExpired:
                ctl.kill()
        for n in (ns, ref_ns):
            kube.delete(r.NAMESPACES, n, ignore_not_found=True)
        kube.close()
        if state is not None:
            stop_testenv(state)


if __name__ == "__main__":
    main()
