"""What progress reporting (KEP-2779) costs, on both backends, beside a reference from the same run.

**local** (always): one job's status server on loopback (TLS, the job's CA and token), as its
supervisor serves it, and the job store it writes to.

* ``trainjob.update_trainjob_status``: the time of one accepted update (the throttle reset
  between calls; the connection kept alive, as in a training loop), median and p95;
* the reference: the Kubeflow SDK 0.5.0's own helper (``requests``), the same loop against the same
  server, from its own virtual environment (``hack/kubeflow-sdk-venv.sh``; left out when absent);
* the supervisor's store write of one update (its trainerStatus and 10 metric values) with the
  job's status, as its tick does it.

**controller** (``--controller``): a private kube-apiserver (``hack/testenv``), trainjob's
controller with its status server, ``--jobs`` TrainJobs each with a pod and a pod-bound token
(TokenRequest, as the kubelet makes it).

* every job reports once (each first report costs a TokenReview and a pod GET), then ``--threads``
  clients post updates of every job round-robin for ``--seconds``: updates/s absorbed, latency;
* the controller's RSS before any report and after every job reported, and its CPU seconds;
* the reference (the floor): the same updates as server-side applies of ``status.trainerStatus``
  straight to the apiserver by the same client threads.

    .venv/bin/python benchmarks/progress.py [--updates 300] [--controller] [--jobs 500]
                                            [--threads 16] [--seconds 20]
"""

from __future__ import annotations

import argparse
import json
import os
import ssl
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks import controller as cbench  # noqa: E402
from tests.e2e import local_jobs as L  # noqa: E402
from tests.integration import controller_harness  # noqa: E402
from tests.integration.controller_harness import Controller, builtin_runtime  # noqa: E402

import trainjob  # noqa: E402
from trainjob import progress  # noqa: E402
from trainjob.core import trainerstatus as ts  # noqa: E402
from trainjob.kube import Client  # noqa: E402
from trainjob.kube import resources as r  # noqa: E402
from trainjob.local.job import statusserver  # noqa: E402
from trainjob.local.state.store import JobRow, ReportRow, Store  # noqa: E402

METRICS = {f"metric_{i}": 0.5 + i for i in range(10)}

UPSTREAM_LOOP = """
import json, sys, time
from kubeflow.trainer.backends.kubernetes import utils
n = int(sys.argv[1])
out = []
for i in range(n):
    utils._last_update_time = 0.0
    t0 = time.perf_counter()
    ok = utils.update_trainjob_status(progress_percent=i % 100, estimated_remaining_seconds=n - i,
                                      metrics={f"metric_{k}": 0.5 + k for k in range(10)})
    out.append(time.perf_counter() - t0)
    assert ok, "update refused"
print(json.dumps(out))
"""


def ms(values: list[float]) -> str:
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return f"median {statistics.median(ordered) * 1000:.2f} ms, p95 {p95 * 1000:.2f} ms"


def kubeflow_python() -> str | None:
    script = REPO / "hack" / "kubeflow-sdk-venv.sh"
    cached = Path.home() / ".cache/trainjob/kubeflow-sdk/kubeflow-0.5.0/bin/python"
    if script.is_file():
        got = subprocess.run(["bash", str(script)], capture_output=True, text=True, timeout=900)
        if got.returncode == 0:
            return got.stdout.strip().splitlines()[-1]
    return str(cached) if cached.is_file() else None


def local(n: int) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="trainjob-progress-bench-"))
    updates: list[dict[str, Any]] = []
    creds = statusserver.credentials(tmp / "job")
    server = statusserver.StatusServer("default", "bench", creds, updates.append)
    env = statusserver.pod_env(server.url, creds)
    os.environ.update(env)
    try:
        progress._reset()
        times_: list[float] = []
        for i in range(n):
            progress._last_update = 0.0
            t0 = time.perf_counter()
            ok = trainjob.update_trainjob_status(
                progress_percent=i % 100, estimated_remaining_seconds=n - i, metrics=METRICS
            )
            times_.append(time.perf_counter() - t0)
            assert ok, "update refused"
        print(f"local: trainjob.update_trainjob_status, one update: {ms(times_)} ({n} updates)")
        python = kubeflow_python()
        if python is None:
            print("local: the Kubeflow SDK's helper: left out (no kubeflow==0.5.0 venv)")
        else:
            got = subprocess.run(
                [python, "-c", UPSTREAM_LOOP, str(n)],
                capture_output=True,
                text=True,
                env={**os.environ, **env},
                timeout=600,
                check=True,
            )
            theirs = json.loads(got.stdout.strip().splitlines()[-1])
            ratio = statistics.median(times_) / statistics.median(theirs)
            print(f"local: the Kubeflow SDK 0.5.0 helper (reference): {ms(theirs)}")
            print(f"local: trainjob / Kubeflow SDK helper, median: {ratio:.2f}")
        # the supervisor's write of one update with the job's status
        store = Store(tmp / "db")
        tj = L.trainjob("bench", "pass").to_dict()
        tj["metadata"].update(namespace="default", uid="u1", creationTimestamp=times_now())
        row = ("default", "bench", "u1", times_now(), 0.0, json.dumps(tj), "{}", "[]", "/")
        store.insert_job(JobRow(*row, "Running"))
        writes: list[float] = []
        for i, update in enumerate(updates):
            metrics = {m["name"]: m["value"] for m in update.get("metrics") or ()}
            rows = [
                ReportRow(
                    "default",
                    "bench",
                    "u1",
                    update["lastUpdatedTime"],
                    update.get("progressPercentage"),
                    update.get("estimatedRemainingSeconds"),
                    json.dumps(metrics),
                )
            ]
            status = json.dumps({"conditions": [], "trainerStatus": update, "i": i})
            t0 = time.perf_counter()
            store.write_status(
                "default", "bench", "u1", pods=[], events=[], reports=rows, status=status
            )
            writes.append(time.perf_counter() - t0)
        print(f"local: the supervisor's store write of one update (10 metrics): {ms(writes)}")
        kept = len(store.reports("default", "bench", "u1"))
        print(f"local: reports in the history after {len(updates)} updates: {kept}")
    finally:
        server.stop()


def times_now() -> str:
    from trainjob.core import times

    return times.now()


# ---------------------------------------------------------------------------------------------
# The controller


def _post(port: int, ca: str, ns: str, name: str, token: str, body: bytes) -> int:
    ctx = _contexts.get(ca)
    if ctx is None:
        ctx = _contexts[ca] = ssl.create_default_context(cafile=ca)
    req = urllib.request.Request(
        f"https://127.0.0.1:{port}{ts.path(ns, name)}", data=body, method="POST"
    )
    req.add_header("Authorization", f"Bearer {token}")
    req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, context=ctx, timeout=30) as resp:
            return int(resp.status)
    except urllib.error.HTTPError as e:
        return int(e.code)


_contexts: dict[str, ssl.SSLContext] = {}


def body(i: int) -> bytes:
    return json.dumps(
        {
            "trainerStatus": {
                "progressPercentage": i % 100,
                "estimatedRemainingSeconds": 100,
                "metrics": [{"name": k, "value": str(v + i)} for k, v in METRICS.items()],
                "lastUpdatedTime": times_now(),
            }
        }
    ).encode()


def pump(
    threads: int, seconds: float, jobs: list[tuple[str, str]], send: Any
) -> tuple[int, int, list[float]]:
    """``threads`` clients sending updates of every job round-robin for ``seconds``."""
    stop = time.monotonic() + seconds
    lock = threading.Lock()
    ok, bad, lat = 0, 0, []

    def client(k: int) -> None:
        nonlocal ok, bad
        i = k
        while time.monotonic() < stop:
            name, token = jobs[i % len(jobs)]
            t0 = time.perf_counter()
            code = send(name, token, body(i))
            dt = time.perf_counter() - t0
            with lock:
                lat.append(dt)
                if code == 200:
                    ok += 1
                else:
                    bad += 1
            i += threads

    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(client, range(threads)))
    return ok, bad, lat


def controller(args: argparse.Namespace) -> None:
    print("controller: starting a private control plane (hack/testenv) ...", flush=True)
    state, kc = cbench.start_testenv()
    ctl: Controller | None = None
    try:
        kube = Client.from_config(str(kc), max_connections=64)
        kube.apply(builtin_runtime("torch-distributed"), field_manager="bench")
        ns = "progress-bench"
        kube.create(
            r.NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}
        )
        kube.create(
            r.SERVICE_ACCOUNTS,
            {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "trainer"}},
            ns,
        )
        # The status server's port is in its URL, so named before the start: the harness picks
        # it, and starts the controller again on another when another process took it first
        # (the health server binds port 0, read back from the log).
        ctl = controller_harness.start_controller(
            controller_harness.Apiserver(kc),
            "--metrics-port",
            "-1",
            webhooks=False,
            port_args=lambda port: (
                "--status-server-host",
                "127.0.0.1",
                "--status-server-port",
                str(port),
                "--status-server-url",
                f"https://127.0.0.1:{port}",
            ),
            log_path=state / "controller.log",
        )
        port = ctl.port("status")
        print(f"controller: creating {args.jobs} TrainJobs, pods and pod-bound tokens ...")

        def make(i: int) -> tuple[str, str]:
            name = f"job-{i:04d}"
            kube.create(
                r.TRAINJOBS,
                {
                    "apiVersion": "trainer.kubeflow.org/v1alpha1",
                    "kind": "TrainJob",
                    "metadata": {"name": name},
                    "spec": {"runtimeRef": {"name": "torch-distributed"}},
                },
                ns,
            )
            pod = kube.create(
                r.PODS,
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {
                        "name": f"{name}-node-0-0",
                        "labels": {"jobset.sigs.k8s.io/jobset-name": name},
                    },
                    "spec": {
                        "serviceAccountName": "trainer",
                        "containers": [{"name": "node", "image": "pytorch/pytorch"}],
                    },
                },
                ns,
            )
            answer = kube.request(
                "POST",
                f"/api/v1/namespaces/{ns}/serviceaccounts/trainer/token",
                body={
                    "apiVersion": "authentication.k8s.io/v1",
                    "kind": "TokenRequest",
                    "spec": {
                        "audiences": [ts.audience(ns, name)],
                        "boundObjectRef": {
                            "apiVersion": "v1",
                            "kind": "Pod",
                            "name": pod["metadata"]["name"],
                            "uid": pod["metadata"]["uid"],
                        },
                    },
                },
            )
            return name, str(answer["status"]["token"])

        with ThreadPoolExecutor(16) as pool:
            jobs = list(pool.map(make, range(args.jobs)))
        js = None
        deadline = time.monotonic() + 120
        while js is None and time.monotonic() < deadline:
            js = kube.get_or_none(r.JOBSETS, "job-0000", ns)
            time.sleep(0.5)
        assert js is not None, "the controller made no JobSet"
        ca = state / "ca.crt"  # what the trainer pod's downward API volume reads
        template = js["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]
        ca.write_text(template["metadata"]["annotations"][ts.CA_ANNOTATION])
        time.sleep(5)  # let the reconciles of the burst settle
        pid = ctl.proc.pid
        before = cbench.proc_stats(pid)

        def via_server(name: str, token: str, b: bytes) -> int:
            return _post(port, str(ca), ns, name, token, b)

        t0 = time.perf_counter()
        with ThreadPoolExecutor(args.threads) as pool:
            firsts = list(pool.map(lambda jt: via_server(jt[0], jt[1], body(0)), jobs))
        first_s = time.perf_counter() - t0
        assert all(c == 200 for c in firsts), f"first reports refused: {set(firsts)}"
        after_first = cbench.proc_stats(pid)
        ok, bad, lat = pump(args.threads, args.seconds, jobs, via_server)
        after = cbench.proc_stats(pid)
        rate = ok / args.seconds
        print(
            f"controller: {args.jobs} jobs' first reports (TokenReview + pod GET each): "
            f"{first_s:.1f} s, {args.jobs / first_s:.0f}/s"
        )
        print(
            f"controller: status updates absorbed: {rate:.0f}/s ({ok} in {args.seconds:.0f} s, "
            f"{bad} refused, {args.threads} clients), latency {ms(lat)}"
        )
        print(
            f"controller: RSS {before['VmRSS']:.1f} MiB before any report, "
            f"{after_first['VmRSS']:.1f} MiB once {args.jobs} jobs reported "
            f"(+{after_first['VmRSS'] - before['VmRSS']:.1f} MiB), {after['VmRSS']:.1f} MiB after "
            f"the run (peak {after['VmHWM']:.1f} MiB); CPU {after['cpu'] - before['cpu']:.1f} s"
        )

        def direct(name: str, _token: str, b: bytes) -> int:
            status = json.loads(b)
            status["trainerStatus"]["lastUpdatedTime"] = times_now()
            kube.apply(
                {
                    "apiVersion": "trainer.kubeflow.org/v1alpha1",
                    "kind": "TrainJob",
                    "metadata": {"name": name, "namespace": ns},
                    "status": status,
                },
                resource=r.TRAINJOBS,
                field_manager=ts.FIELD_MANAGER,
                subresource="status",
            )
            return 200

        ok2, _, lat2 = pump(args.threads, args.seconds, jobs, direct)
        floor = ok2 / args.seconds
        print(
            f"controller: the floor, the same applies straight to the apiserver: {floor:.0f}/s, "
            f"latency {ms(lat2)}; through the status server / floor: {rate / floor:.2f}"
        )
    finally:
        if ctl is not None:
            ctl.stop()
        cbench.stop_testenv(state)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--updates", type=int, default=300, help="local updates to time")
    ap.add_argument("--controller", action="store_true", help="also the controller's server")
    ap.add_argument("--jobs", type=int, default=500)
    ap.add_argument("--threads", type=int, default=16)
    ap.add_argument("--seconds", type=float, default=20.0)
    args = ap.parse_args()
    local(args.updates)
    if args.controller:
        controller(args)


if __name__ == "__main__":
    main()
