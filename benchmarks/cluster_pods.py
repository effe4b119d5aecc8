"""From TrainJob creation to every pod Running, on a whole simulated cluster: trainjob's controller
beside upstream's, in one run.

``hack/testenv up --cluster`` (kube-controller-manager, kube-scheduler, KWOK fake nodes, the real
JobSet controller and its webhooks) with N two-node TrainJobs (``torch-distributed``) created at
once by the client threads, for each controller in turn (upstream's ``trainer-controller-manager``
v2.3.0 first, with its CRDs and webhooks, then trainjob's with its own; each in a namespace of its
own, deleted, and every pod gone, before the next starts). KWOK runs a scheduled pod at once and
ends it Succeeded a second later (``hack/kwok/pod-stages.yaml``), so the figure is the time until
each of the 2N pods has been Running (a pod first seen Succeeded was Running before).

For each controller: the time until every pod Running (from the first create), each TrainJob's
create -> both its pods Running (p50 / p99), the controller's CPU seconds and peak RSS over the
run; then trainjob / upstream. The chain a TrainJob goes through is the same for both: admission
webhooks, the controller's JobSet, JobSet's Jobs, the Job controller's pods, the scheduler, KWOK.

    .venv/bin/python benchmarks/cluster_pods.py [--jobs 100] [--nodes 4] [--workers 5]
                                                [--threads 32] [--no-status-server]

Measured 2026-12-01 (``--jobs 100``, 2 cores shared with other engineers' tests at load 10-15; the
cluster's own chain, JobSet, Job controller, scheduler and KWOK, takes most of the time):

    trainjob / upstream                      run 1 (a)        run 2
    every pod Running                        1.02x (96 / 94 s) 0.93x (90 / 96 s)
    per job, create -> both pods Running p50 0.85x            1.17x
    controller CPU for the run               0.76x (1.2 / 1.6) 0.93x (1.4 / 1.6 s)
    controller peak RSS                      1.15x (50 / 44)   1.13x (50 / 44 MiB)

and 2026-12-02 07:33 (load 1.5-2, after the admission-first change of benchmarks/controller.py's
fourth round): every pod Running 1.03x (26.5 / 25.7 s), per job p50 0.93x, controller CPU 0.64x
(0.9 / 1.5 s), peak RSS 1.10x (50 / 45 MiB).

(a) before cached keys were interned. At 100 jobs the peak is the interpreter's floor (idle 46 MiB
against Go's 37); at 500, in benchmarks/controller.py, trainjob's peak is below upstream's.

Needs the cluster's binaries (``hack/build-control-plane.sh cluster``, cached by version) and
upstream's controller (``hack/build-upstream-controller.sh``, cached); both are built when missing.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks import controller as burst  # noqa: E402
from tests.integration import upstream_harness  # noqa: E402

from trainjob.kube import Client  # noqa: E402
from trainjob.kube import resources as r  # noqa: E402
from trainjob.kube.errors import Gone, NotFound  # noqa: E402

Obj = dict[str, Any]
JOBSET_NAME = "jobset.sigs.k8s.io/jobset-name"
SERVICE_ACCOUNTS = r.Resource("", "v1", "serviceaccounts", "ServiceAccount")


def start_cluster(nodes: int) -> tuple[Path, Path]:
    state = Path(tempfile.mkdtemp(prefix="trainjob-bench-cluster-"))
    kc = state / "kubeconfig"
    env = {**os.environ, "TRAINJOB_TESTENV_DIR": str(state / "cp")}
    env.pop("KUBECONFIG", None)
    up = [str(REPO / "hack" / "testenv"), "up", "--cluster", "--nodes", str(nodes)]
    with open(state / "testenv-up.log", "wb") as log:
        done = subprocess.run(
            [*up, "--kubeconfig", str(kc)],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    if done.returncode != 0:
        raise SystemExit(f"hack/testenv up --cluster failed; see {state / 'testenv-up.log'}")
    return state, kc


def stop_cluster(state: Path) -> None:
    env = {**os.environ, "TRAINJOB_TESTENV_DIR": str(state / "cp")}
    subprocess.run([str(REPO / "hack" / "testenv"), "down"], env=env, capture_output=True)
    shutil.rmtree(state, ignore_errors=True)


class PodWatcher:
    """When each pod of a namespace was first seen Running or past it (a watch, resumed from the last
    resourceVersion; listed again when that is too old)."""

    def __init__(self, kube: Client, namespace: str) -> None:
        self.kube, self.namespace = kube, namespace
        self.running: dict[str, tuple[str, float]] = {}  # pod -> (its JobSet, when Running)
        self.stopped = threading.Event()
        self.watch: Any = None
        self.errors: list[str] = []
        _, self.rv = kube.list_all(r.PODS, namespace)
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _see(self, pod: Obj, now: float) -> None:
        if (pod.get("status") or {}).get("phase") not in ("Running", "Succeeded", "Failed"):
            return
        meta = pod.get("metadata") or {}
        owner = (meta.get("labels") or {}).get(JOBSET_NAME, "")
        self.running.setdefault(meta.get("name", ""), (owner, now))

    def _run(self) -> None:
        while not self.stopped.is_set():
            try:
                self.watch = self.kube.watch(r.PODS, self.namespace, resource_version=self.rv)
                for event in self.watch:
                    self.rv = event.resource_version or self.rv
                    if event.type in ("ADDED", "MODIFIED"):
                        self._see(event.object, time.monotonic())
            except Gone:
                items, self.rv = self.kube.list_all(r.PODS, self.namespace)
                now = time.monotonic()
                for item in items:
                    self._see(item, now)
            except Exception as e:
                self.errors.append(repr(e))
                time.sleep(0.2)

    def wait_all(self, n: int, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while len(self.running) < n:
            if time.monotonic() > deadline:
                raise SystemExit(
                    f"only {len(self.running)}/{n} pods Running after {timeout:.0f}s "
                    f"(watch errors: {self.errors[-3:]})"
                )
            time.sleep(0.05)

    def stop(self) -> None:
        self.stopped.set()
        if self.watch is not None:
            self.watch.stop()


@dataclass
class Run:
    name: str
    jobs: int
    total: float = 0.0
    per_job: list[float] = field(default_factory=list)
    rss_peak: float = 0.0
    cpu: float = 0.0


def new_namespace(kube: Client, name: str) -> None:
    kube.create(r.NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    # Pods need the namespace's default ServiceAccount (the ServiceAccount controller makes it).
    burst.wait_until(
        lambda: kube.get_or_none(SERVICE_ACCOUNTS, "default", name) is not None,
        f"the default ServiceAccount of {name}",
        timeout=60,
    )


def delete_namespace(kube: Client, name: str, timeout: float = 300) -> None:
    """Delete it and wait until it is gone (the namespace controller removes what it holds)."""
    kube.delete(r.NAMESPACES, name, ignore_not_found=True)
    deadline = time.monotonic() + timeout
    while True:
        try:
            kube.get(r.NAMESPACES, name)
        except NotFound:
            return
        if time.monotonic() > deadline:
            raise SystemExit(f"namespace {name} not gone after {timeout:.0f}s")
        time.sleep(0.5)


def measure(name: str, kube: Client, pid: int, ns: str, args: argparse.Namespace) -> Run:
    """N TrainJobs created at once in ``ns`` while the controller ``pid`` runs: its figures."""
    # One TrainJob first, so the controller's caches are synced and its paths warm (as in
    # benchmarks/controller.py); its namespace is gone before the clock starts.
    wns = ns + "-warm"
    new_namespace(kube, wns)
    w = PodWatcher(kube, wns)
    burst.burst(kube, [burst.trainjob("warm", wns)], r.TRAINJOBS, 1)
    w.wait_all(2, 120)
    w.stop()
    delete_namespace(kube, wns)
    new_namespace(kube, ns)
    run = Run(name, args.jobs)
    before = burst.proc_stats(pid)
    watcher = PodWatcher(kube, ns)
    t0 = time.monotonic()
    created, _ = burst.burst(
        kube,
        [burst.trainjob(f"job-{i:04d}", ns) for i in range(args.jobs)],
        r.TRAINJOBS,
        args.threads,
    )
    watcher.wait_all(2 * args.jobs, args.timeout)
    run.total = max(t for _, t in watcher.running.values()) - t0
    watcher.stop()
    by_job: dict[str, float] = {}
    for owner, t in watcher.running.values():
        by_job[owner] = max(by_job.get(owner, 0.0), t)
    run.per_job = [by_job[n] - created[n] for n in created]
    stats = burst.proc_stats(pid)
    run.rss_peak = stats["VmHWM"]
    run.cpu = stats["cpu"] - before["cpu"]
    return run


def report(args: argparse.Namespace, runs: list[Run]) -> None:
    print()
    print(
        f"cluster_pods.py: {args.jobs} TrainJobs at once (torch-distributed, 2 nodes: "
        f"{2 * args.jobs} pods) on {args.nodes} KWOK nodes, {args.threads} client threads, "
        f"trainjob --workers {args.workers}, status server "
        f"{'off' if args.no_status_server else 'on'}"
    )
    rows: list[tuple[str, ...]] = [("", *(x.name for x in runs))]
    rows.append(("every pod Running", *(f"{x.total:.2f} s" for x in runs)))
    rows.append(
        (
            "per job, create -> both pods Running p50 / p99",
            *(
                f"{statistics.median(x.per_job):.2f} / {burst.percentile(x.per_job, 99):.2f} s"
                for x in runs
            ),
        )
    )
    rows.append(("controller CPU for the run", *(f"{x.cpu:.1f} s" for x in runs)))
    rows.append(("controller peak RSS", *(f"{x.rss_peak:.0f} MiB" for x in runs)))
    widths = [max(len(rw[i]) for rw in rows) for i in range(len(rows[0]))]
    for rw in rows:
        print("  " + "  ".join(v.ljust(w) for v, w in zip(rw, widths, strict=True)))
    result: Obj = {"jobs": args.jobs, "nodes": args.nodes}
    for x in runs:
        result[x.name] = {
            "all_pods_running_s": round(x.total, 3),
            "per_job_p50_s": round(statistics.median(x.per_job), 3),
            "per_job_p99_s": round(burst.percentile(x.per_job, 99), 3),
            "cpu_s": round(x.cpu, 2),
            "rss_peak_mib": round(x.rss_peak, 1),
        }
    tj = next((x for x in runs if x.name == "trainjob"), None)
    up = next((x for x in runs if x.name == "upstream"), None)
    if tj is not None and up is not None:
        ratios = {
            "all_pods_running": tj.total / up.total,
            "per_job_p50": statistics.median(tj.per_job) / statistics.median(up.per_job),
            "cpu": tj.cpu / up.cpu,
            "rss_peak": tj.rss_peak / up.rss_peak,
        }
        result["trainjob_over_upstream"] = {k: round(v, 3) for k, v in ratios.items()}
        print()
        for k, v in ratios.items():
            print(f"  {k + ', trainjob / upstream':<40} {v:.2f}x")
    print(json.dumps(result))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=100)
    ap.add_argument("--nodes", type=int, default=4, help="KWOK CPU nodes (110 pods each)")
    ap.add_argument("--workers", type=int, default=5, help="trainjob controller --workers")
    ap.add_argument("--threads", type=int, default=32, help="client threads creating TrainJobs")
    ap.add_argument("--no-upstream", action="store_true", help="trainjob's controller only")
    ap.add_argument("--no-status-server", action="store_true")
    ap.add_argument("--timeout", type=float, default=600)
    args = ap.parse_args()
    args.no_webhooks = False
    args.profile = None

    print("starting a whole cluster (hack/testenv up --cluster) ...", flush=True)
    state, kc = start_cluster(args.nodes)
    kubeconfig = str(kc)
    kube = Client.from_config(kubeconfig, max_connections=args.threads + 8)
    tag = uuid.uuid4().hex[:6]
    try:
        kube.apply(
            yaml.safe_load((REPO / "manifests/runtimes/torch-distributed.yaml").read_text()),
            field_manager="trainjob-bench",
        )
        runs = []
        if not args.no_upstream:
            b = upstream_harness.build()
            upstream_harness.swap_crds(kube, b.crds)
            print("upstream's controller ...", flush=True)
            up = upstream_harness.start(b, kc, kube, extra_args=["--zap-log-level", "error"])
            try:
                burst.wait_until(
                    lambda: upstream_harness.webhooks_effective(kube), "upstream's webhooks"
                )
                runs.append(measure("upstream", kube, up.proc.pid, f"bench-{tag}-up", args))
            finally:
                up.stop()
            delete_namespace(kube, f"bench-{tag}-up")
            upstream_harness.swap_crds(kube, sorted((REPO / "manifests" / "crds").glob("*.yaml")))
        print("trainjob's controller ...", flush=True)
        with burst.trainjob_controller(kube, kubeconfig, args, f"cluster-{tag}") as pid:
            runs.append(measure("trainjob", kube, pid, f"bench-{tag}-tj", args))
        report(args, runs)
    finally:
        kube.close()
        stop_cluster(state)


if __name__ == "__main__":
    main()
