"""How fast the dashboard answers: the Jobs page with 1,000 jobs, and a followed log line.

Against a real ``trainjob dashboard`` process (uvicorn, the local backend) on a fresh
``$TRAINJOB_HOME``, in this one run:

* **jobs**: 1,000 finished TrainJobs with progress, pods and conditions written into the store
  (tests/stored_jobs.py: what runs leave). Timed, over ``--repeat`` tries: the page's HTML
  (``GET /``), the rows (``GET /api/jobs``, what the page shows, 1,000 rows of JSON) read fresh
  (after the dashboard's 1 s poll interval, with the dashboard process's CPU time per read: on a
  shared machine the wall time is mostly waiting for a core) and within it (the one listing every
  page and stream of that interval shares), the first event of the live stream (``/api/jobs/stream``'s snapshot:
  what the page waits for), and as
  the reference the executor's own listing in this process (``LocalExecutor.states``, what
  ``trainjob get jobs`` reads) — the floor an app over the executor cannot beat — and
  ``trainjob get jobs -A`` itself (a new process: its start-up and the listing). Target: the
  rows under 200 ms.
* **logs**: a real local job prints a line stamped with ``time.time()`` every 50 ms; the
  dashboard's log stream (``.../logs?follow=1``, server-sent events over HTTP) and, as the
  reference, ``LocalExecutor.logs(follow=True)`` in this process (what ``trainjob logs -f``
  reads) follow it at once; each line's latency is the time it arrived minus its stamp.
  Target: under 0.5 s.

    .venv/bin/python benchmarks/dashboard.py [--jobs 1000] [--repeat 20] [--lines 100]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # tests/ (the stored jobs, the plain runtime)

from tests.e2e import local_jobs  # noqa: E402
from tests.stored_jobs import store_job, trainer_status  # noqa: E402

from trainjob.local.client.executor import LocalExecutor  # noqa: E402


def start(home: Path) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "trainjob", "dashboard", "--port", "0"],
        env={**os.environ, "TRAINJOB_HOME": str(home)},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert proc.stdout is not None
    for line in proc.stdout:
        m = re.search(r"(http://\S+)", line)
        if m:
            return proc, m.group(1).rstrip("/")
    raise SystemExit("the dashboard printed no URL")


def ms(values: list[float]) -> str:
    values = sorted(values)
    p95 = values[min(len(values) - 1, round(0.95 * (len(values) - 1)))]
    return f"median {statistics.median(values) * 1000:7.1f} ms   p95 {p95 * 1000:7.1f} ms   min {values[0] * 1000:7.1f} ms"


def timed(fn: object, repeat: int, *, pause: float = 0.0) -> list[float]:
    out = []
    for _ in range(repeat):
        time.sleep(pause)
        t = time.perf_counter()
        fn()  # type: ignore[operator]
        out.append(time.perf_counter() - t)
    return out


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of process ``pid`` so far (/proc/PID/stat)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def jobs_bench(home: Path, url: str, n: int, repeat: int, pid: int) -> None:
    ex = LocalExecutor(home)
    t = time.perf_counter()
    for i in range(n):
        status = {"trainerStatus": trainer_status(100, 0, {"loss": f"{1 / (i + 1):.4f}"})}
        store_job(
            ex,
            f"job-{i:04d}",
            f"team-{i % 10}",
            phase="Complete" if i % 7 else "Failed",
            status=status,
        )
    print(f"stored {n} jobs in {time.perf_counter() - t:.1f} s")
    with httpx.Client(base_url=url, timeout=60) as c:
        assert len(c.get("/api/jobs").json()["jobs"]) == n  # and warm
        body = c.get("/api/jobs").content

        def snapshot() -> None:
            with c.stream("GET", "/api/jobs/stream") as r:
                for line in r.iter_lines():
                    if line.startswith("data: "):
                        assert len(json.loads(line[6:])["jobs"]) == n
                        return

        print(f"jobs page, {n} jobs ({len(body) / 1024:.0f} KiB of rows), {repeat} tries:")
        print(f"  GET /                         {ms(timed(lambda: c.get('/'), repeat))}")
        rows = lambda: c.get("/api/jobs")  # noqa: E731
        # After the dashboard's poll interval (1 s) the listing is read from the store again.
        before = cpu_seconds(pid)
        fresh = timed(rows, repeat, pause=1.1)
        cpu = (cpu_seconds(pid) - before) / repeat
        print(f"  GET /api/jobs, a fresh read   {ms(fresh)}")
        print(
            f"    the dashboard's CPU time per fresh read: {cpu * 1000:.0f} ms (what load does not change)"
        )
        print(
            f"  GET /api/jobs, within 1 s     {ms(timed(rows, repeat))}   (the listing shared by every page and stream)"
        )
        print(f"  /api/jobs/stream first event  {ms(timed(snapshot, repeat, pause=1.1))}   (fresh)")
    print(f"  reference: LocalExecutor.states  {ms(timed(lambda: ex.states(pods=False), repeat))}")
    env = {**os.environ, "TRAINJOB_HOME": str(home)}
    cli = [sys.executable, "-m", "trainjob", "get", "jobs", "-A"]

    def get_jobs() -> None:
        out = subprocess.run(cli, env=env, capture_output=True, text=True, check=True).stdout
        assert out.count("\n") == n + 1, out[-500:]

    print(f"  trainjob get jobs -A (a process) {ms(timed(get_jobs, max(3, repeat // 4)))}")


CODE = """
import time
time.sleep(1.0)
for i in range({lines}):
    print(f"stamp {{time.time():.6f}} {{i}}", flush=True)
    time.sleep(0.05)
"""


def logs_bench(home: Path, url: str, lines: int, tmp: Path) -> None:
    ex = LocalExecutor(home)
    tj = local_jobs.trainjob("log-latency", CODE.format(lines=lines))
    ex.submit(tj, [local_jobs.runtime()], cwd=str(tmp))
    dashboard: list[float] = []
    direct: list[float] = []

    def via_dashboard() -> None:
        path = "/api/jobs/default/log-latency/logs?step=node-0&follow=1"
        with httpx.Client(base_url=url, timeout=120) as c, c.stream("GET", path) as r:
            for line in r.iter_lines():
                if line.startswith("event: end"):
                    return
                if line.startswith("data: "):
                    now = time.time()
                    for text in json.loads(line[6:]).get("lines", ()):
                        if text.startswith("stamp "):
                            dashboard.append(now - float(text.split()[1]))

    def via_executor() -> None:
        for text in LocalExecutor(home).logs("log-latency", "default", "node", 0, follow=True):
            if text.startswith("stamp "):
                direct.append(time.time() - float(text.split()[1]))

    threads = [threading.Thread(target=f) for f in (via_dashboard, via_executor)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    print(f"log line latency, {lines} lines printed 50 ms apart by a running job:")
    print(
        f"  dashboard (SSE over HTTP)     {ms(dashboard)}   max {max(dashboard) * 1000:.1f} ms ({len(dashboard)} lines)"
    )
    print(
        f"  reference: executor logs -f   {ms(direct)}   max {max(direct) * 1000:.1f} ms ({len(direct)} lines)"
    )
    ex.delete("log-latency", "default")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jobs", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--lines", type=int, default=100)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="trainjob-dashboard-bench-") as d:
        home = Path(d) / "home"
        proc, url = start(home)
        try:
            logs_bench(home, url, args.lines, Path(d))
            jobs_bench(home, url, args.jobs, args.repeat, proc.pid)
        finally:
            proc.terminate()
            proc.wait(10)


if __name__ == "__main__":
    main()
