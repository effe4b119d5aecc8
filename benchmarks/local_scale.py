"""The local backend busy: 1,000 jobs in the store, and 100 jobs submitted at once on this machine.

Three parts, each beside a reference measured in the same run, each figure at every count with
its growth (the ratio to the first count, and per job), and the machine's load beside them (the
load average and how busy its CPUs were, by everyone, while the part ran):

* **listing** (``--counts 100,200,500,1000``): one home holding that many finished TrainJobs
  (real TrainJobs and Plans compiled by the SDK's builder, two pods each, written through the
  store's API: no process behind them) and ``--running`` jobs really running (a supervisor and a
  ``sleep``). Timed: ``trainjob get jobs`` as a user runs it (the console script, a new process,
  cold), beside a process that only SELECTs the same rows with :mod:`sqlite3` and prints them
  (the floor of any listing command); ``TrainerClient().list_jobs()`` in this process, beside
  a plain ``sqlite3`` SELECT of the listing's columns. Target: ``get jobs`` under 150 ms with
  1,000 jobs on a quiet machine.
* **dashboard** (``--no-browser`` skips it): the Jobs page of a real ``trainjob dashboard`` on that
  home in Debian's headless Chromium (Playwright): from navigation to every row in the table,
  beside the same browser given a static page of as many rows of the same cells (the floor of
  drawing that table).
* **burst** (``--burst 100``, 0 skips it): that many small CPU jobs (a ``python -c`` that spins
  0.3 s and records when it ran) submitted at once through ``LocalExecutor.submit`` on a fresh
  home, the machine's own limits (``TRAINJOB_LOCAL_CPUS`` unset, unless ``--cpus``): the time to
  every one Complete, how many ran at once (from what they recorded), how many waited Queued,
  the peak RSS of all the home's processes (supervisors, queued or not, and pods), and the
  kernel's OOM kills meanwhile (``/proc/vmstat``); beside the same commands started at once with
  :class:`subprocess.Popen` (no queue, no supervisor).

    .venv/bin/python benchmarks/local_scale.py [--counts 100,200,500,1000] [--repeat 7]
        [--running 5] [--burst 100] [--no-browser]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.e2e import local_jobs  # noqa: E402

from trainjob import CustomTrainer, LocalBackendConfig, TrainerClient  # noqa: E402
from trainjob.client import builder  # noqa: E402
from trainjob.executor.phases import activity  # noqa: E402
from trainjob.local.client.executor import LocalExecutor  # noqa: E402
from trainjob.local.state import home as homes  # noqa: E402
from trainjob.local.state import store as st  # noqa: E402
from trainjob.local.state.rows import LISTING_COLS  # noqa: E402
from trainjob.runtime import compile  # noqa: E402

TARGET_GET_MS = 150.0
PAGE = 200  # the rows the Jobs page draws at first (dashboard/static/jobs.js)
BIN = Path(sys.executable).parent
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
SELECT = f"SELECT {', '.join(LISTING_COLS)} FROM jobs ORDER BY created_ts, namespace, name"
FLOOR = f"import sqlite3, sys; print(*sqlite3.connect(sys.argv[1]).execute({SELECT!r}).fetchall(), sep=chr(10))"


def median_ms(fn: Callable[[], Any], repeat: int) -> float:
    out = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t) * 1000)
    return statistics.median(out)


def cpu_busy() -> tuple[int, int]:
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + fields[4]
    return sum(fields) - idle, sum(fields)


@contextmanager
def load(what: str) -> Iterator[None]:
    """Print the machine's load while ``what`` ran: load average, and how busy its CPUs were."""
    before, t = cpu_busy(), time.monotonic()
    yield
    after = cpu_busy()
    busy = (after[0] - before[0]) / max(1, after[1] - before[1])
    la = os.getloadavg()
    print(
        f"  [machine during {what}: {os.cpu_count()} CPUs {busy:.0%} busy (everyone's), "
        f"load {la[0]:.1f} {la[1]:.1f} {la[2]:.1f}, {time.monotonic() - t:.0f} s]"
    )


def growth(values: list[float], counts: list[int]) -> str:
    first = values[0]
    return "  ".join(f"{v / first:.2f}x" for v in values)


# -- listing ------------------------------------------------------------------------------------


class Seeder:
    """Finished TrainJobs with real TrainJob and Plan JSON (one compile, names varied)."""

    def __init__(self, client: TrainerClient) -> None:
        from tests.e2e import sdk_funcs

        backend: Any = client.backend
        self.store: st.Store = backend.executor.store
        runtime = backend.get_runtime("torch-distributed")
        cr = backend.executor.get_runtime("torch-distributed", "ClusterTrainingRuntime", None)
        job = builder.build(
            runtime,
            trainer=CustomTrainer(
                func=sdk_funcs.ddp_all_reduce, num_nodes=2, resources_per_node={"cpu": 1}
            ),
            name="seed",
            namespace="default",
        )
        tj = builder.model(job)
        self.trainjob = tj.to_dict()
        self.runtime = json.dumps(cr.to_dict())
        self.plan = json.dumps(list(compile(tj, cr).objects))
        self.count = 0

    def add(self, n: int) -> None:
        t0 = time.time() - 86400
        for _ in range(n):
            i = self.count
            self.count += 1
            name, uid = f"done-{i:05d}", f"uid-{i}"
            phase = ("Complete", "Failed", "Complete", "Complete")[i % 4]
            created = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t0 + i))
            tj = json.loads(json.dumps(self.trainjob))
            tj["metadata"].update(name=name, uid=uid, creationTimestamp=created)
            cond = {"type": phase, "status": "True", "reason": "Done", "message": "",
                    "lastTransitionTime": created}  # fmt: skip
            report = {"lastUpdatedTime": created, "progressPercentage": 100,
                      "metrics": [{"name": "loss", "value": f"{1 / (i + 1):.4f}"}]}  # fmt: skip
            self.store.insert_job(
                st.JobRow(
                    namespace="default",
                    name=name,
                    uid=uid,
                    created=created,
                    created_ts=t0 + i,
                    trainjob=json.dumps(tj),
                    runtime=self.runtime,
                    plan=self.plan,
                    cwd="/tmp",
                    phase=phase,
                    status=json.dumps({"conditions": [cond], "trainerStatus": report}),
                    started=created,
                    completed=created,
                )
            )
            pod = "Succeeded" if phase == "Complete" else "Failed"
            self.store.put_pods(
                [
                    st.PodRow(
                        "default",
                        name,
                        uid,
                        "node",
                        0,
                        k,
                        f"{name}-node-0-{k}-abcde",
                        pod,
                        0 if pod == "Succeeded" else 1,
                        created,
                        created,
                    )
                    for k in range(2)
                ]
            )


def listing(home: Path, counts: list[int], repeat: int, running: int) -> list[int]:
    print(f"listing: {counts} finished jobs and {running} running, {repeat} tries each (median ms)")
    client = TrainerClient(LocalBackendConfig(home=home))
    seeder = Seeder(client)
    ex = LocalExecutor(home)
    for i in range(running):
        job = local_jobs.trainjob(f"live-{i}", "import time; time.sleep(3600)")
        ex.submit(job, [local_jobs.runtime()], cwd=str(home))
    env = {**os.environ, "TRAINJOB_HOME": str(home)}
    db = str(homes.db_path(home))
    rows: list[tuple[int, float, float, float, float]] = []
    with load("the listing"):
        for n in counts:
            seeder.add(n - seeder.count)
            total = n + running

            def get_jobs(total: int = total) -> None:
                out = subprocess.run(
                    [str(BIN / "trainjob"), "get", "jobs"], env=env, capture_output=True,
                    check=True,
                ).stdout  # fmt: skip
                assert out.count(b"\n") == total + 1, out[-300:]

            def floor_process() -> None:
                subprocess.run([sys.executable, "-c", FLOOR, db], capture_output=True, check=True)

            def floor_select(total: int = total) -> None:
                con = sqlite3.connect(db)
                assert len(con.execute(SELECT).fetchall()) == total
                con.close()

            def list_jobs(total: int = total) -> None:
                assert len(client.list_jobs()) == total

            get_jobs(), list_jobs()  # warm the disk cache and the client
            cli = ref = 0.0
            pairs_cli, pairs_ref = [], []
            for _ in range(repeat):  # pair by pair: the machine's speed drifts
                pairs_ref.append(median_ms(floor_process, 1))
                pairs_cli.append(median_ms(get_jobs, 1))
            cli, ref = statistics.median(pairs_cli), statistics.median(pairs_ref)
            sdk = median_ms(list_jobs, repeat)
            sel = median_ms(floor_select, repeat)
            rows.append((total, cli, ref, sdk, sel))
    print(f"  {'jobs':>6} {'get jobs':>9} {'floor proc':>10} {'x floor':>7} {'list_jobs':>9} "
          f"{'SELECT':>7} {'x SELECT':>8}")  # fmt: skip
    for total, cli, ref, sdk, sel in rows:
        print(f"  {total:6d} {cli:9.1f} {ref:10.1f} {cli / ref:6.2f}x {sdk:9.1f} {sel:7.1f} "
              f"{sdk / sel:7.1f}x")  # fmt: skip
    print(f"  growth get jobs   {growth([r[1] for r in rows], counts)}")
    print(f"  growth list_jobs  {growth([r[3] for r in rows], counts)}")
    if len(rows) > 1:
        (n0, c0, _, s0, _), (n1, c1, _, s1, _) = rows[0], rows[-1]
        print(
            f"  per extra job: get jobs {(c1 - c0) / (n1 - n0) * 1000:.0f} us, list_jobs "
            f"{(s1 - s0) / (n1 - n0) * 1000:.0f} us"
        )
    big = rows[-1]
    verdict = "PASS" if big[1] < TARGET_GET_MS else "over"
    print(
        f"  {verdict}: get jobs with {big[0]} jobs {big[1]:.0f} ms (target < {TARGET_GET_MS:.0f} ms on a quiet machine)"
    )
    return [r[0] for r in rows]


# -- dashboard ------------------------------------------------------------------------------------


def static_table(n: int) -> str:
    row = (
        "<tr>" + "".join(f"<td>cell {k}</td>" for k in range(9)) + "<td><a href='#'>x</a></td></tr>"
    )
    return f"<table><tbody>{row * n}</tbody></table>"


# -- burst ------------------------------------------------------------------------------------


SPIN = """
import json, os, time
start = time.time()
while time.time() - start < 0.3:
    pass
with open({marks!r}, "a") as f:
    f.write(json.dumps({{"start": start, "end": time.time()}}) + "\\n")
"""


def most_at_once(marks: Path) -> int:
    ran = [json.loads(line) for line in marks.read_text().splitlines()]
    edges = sorted([(m["start"], 1) for m in ran] + [(m["end"], -1) for m in ran])
    now = most = 0
    for _, step in edges:
        now += step
        most = max(most, now)
    return most


def _procs() -> dict[int, tuple[int, str, int]]:
    """pid -> (ppid, cmdline, RSS bytes) of every process."""
    out = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            stat = Path(f"/proc/{d}/stat").read_text().rsplit(")", 1)[1].split()
            cmd = (
                Path(f"/proc/{d}/cmdline")
                .read_bytes()
                .replace(b"\0", b" ")
                .decode(errors="replace")
            )
            out[int(d)] = (int(stat[1]), cmd, int(stat[21]) * os.sysconf("SC_PAGE_SIZE"))
        except (OSError, IndexError, ValueError):
            continue
    return out


def rss_below(match: Callable[[str], bool]) -> tuple[int, int]:
    """(RSS bytes, processes) of the processes whose command line matches and their descendants."""
    procs = _procs()
    roots = {pid for pid, (_, cmd, _) in procs.items() if match(cmd)}
    kids: dict[int, list[int]] = {}
    for pid, (ppid, _, _) in procs.items():
        kids.setdefault(ppid, []).append(pid)
    seen, todo = set(), list(roots)
    while todo:
        pid = todo.pop()
        if pid not in seen:
            seen.add(pid)
            todo.extend(kids.get(pid, ()))
    return sum(procs[p][2] for p in seen if p in procs), len(seen)


def queued(s: Any) -> bool:
    return activity(s)[0] == "Queued"


def oom_kills() -> int:
    for line in Path("/proc/vmstat").read_text().splitlines():
        if line.startswith("oom_kill "):
            return int(line.split()[1])
    return -1


def burst(tmp: Path, count: int, cpus: str | None) -> None:
    print(f"burst: {count} small CPU jobs (0.3 s of spinning each) submitted at once")
    home = tmp / "burst-home"
    marks = tmp / "burst-marks.jsonl"
    env_before = os.environ.pop("TRAINJOB_LOCAL_CPUS", None)
    if cpus:
        os.environ["TRAINJOB_LOCAL_CPUS"] = cpus
    code = SPIN.format(marks=str(marks))
    ex = LocalExecutor(home)
    ooms = oom_kills()
    peak = (0, 0)
    queued_peak = 0
    with load("the burst"):
        t = time.perf_counter()
        for i in range(count):
            ex.submit(local_jobs.trainjob(f"b-{i:03d}", code), [local_jobs.runtime()], cwd=str(tmp))
        submitted = time.perf_counter() - t
        while True:
            rss = rss_below(lambda cmd: "trainjob.local.job" in cmd and str(home) in cmd)
            peak = max(peak, rss)
            states = ex.states(pods=False)
            queued_peak = max(queued_peak, sum(1 for s in states if queued(s)))
            if all(s.finished for s in states):
                break
            time.sleep(0.2)
        took = time.perf_counter() - t
    phases = [s.phase for s in ex.states(pods=False)]
    trainjob_most = most_at_once(marks)
    new_ooms = oom_kills() - ooms
    os.environ.pop("TRAINJOB_LOCAL_CPUS", None)
    if env_before is not None:
        os.environ["TRAINJOB_LOCAL_CPUS"] = env_before
    # the reference: the same commands at once, no queue, no supervisor
    ref_marks = tmp / "ref-marks.jsonl"
    ref_code = SPIN.format(marks=str(ref_marks))
    ref_peak = (0, 0)
    with load("the reference"):
        t = time.perf_counter()
        procs = [
            subprocess.Popen([sys.executable, "-c", ref_code, f"ref-{i}"]) for i in range(count)
        ]
        while any(p.poll() is None for p in procs):
            ref_peak = max(ref_peak, rss_below(lambda cmd: "ref-" in cmd and "-c" in cmd))
            time.sleep(0.05)
        ref_took = time.perf_counter() - t
    # the second reference: the same commands, no more at once than trainjob ran (a pool)
    pool_marks = tmp / "pool-marks.jsonl"
    pool_code = SPIN.format(marks=str(pool_marks))
    width = max(1, trainjob_most)
    with load("the pool"):
        t = time.perf_counter()
        running: list[subprocess.Popen[bytes]] = []
        for i in range(count):
            while len(running) >= width:
                running = [p for p in running if p.poll() is None]
                time.sleep(0.005)
            running.append(subprocess.Popen([sys.executable, "-c", pool_code, f"pool-{i}"]))
        for p in running:
            p.wait()
        pool_took = time.perf_counter() - t
    limit = cpus or f"{len(os.sched_getaffinity(0))} (the machine's)"
    print(f"  trainjob: {count} jobs, TRAINJOB_LOCAL_CPUS {limit}")
    print(f"    submitted in {submitted:.1f} s; all finished in {took:.1f} s: "
          f"{ {p: phases.count(p) for p in sorted(set(phases))} }")  # fmt: skip
    print(f"    at most {trainjob_most} ran at once; up to {queued_peak} waited Queued")
    print(f"    peak RSS of the home's processes {peak[0] >> 20} MiB ({peak[1]} processes); "
          f"OOM kills meanwhile: {new_ooms}")  # fmt: skip
    print(f"  reference, {count} x subprocess.Popen at once: all finished in {ref_took:.1f} s, "
          f"{most_at_once(ref_marks)} ran at once, peak RSS {ref_peak[0] >> 20} MiB "
          f"({ref_peak[1]} processes)")  # fmt: skip
    print(f"  reference, the same commands {width} at a time (a pool of Popen): all finished in "
          f"{pool_took:.1f} s, {most_at_once(pool_marks)} ran at once")  # fmt: skip
    print(f"  trainjob / all at once: time {took / ref_took:.1f}x, peak RSS "
          f"{peak[0] / max(1, ref_peak[0]):.1f}x; trainjob / the pool: time "
          f"{took / pool_took:.1f}x, {(took - pool_took) / count * width:.2f} s a job above it")  # fmt: skip


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--counts", default="100,200,500,1000")
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--running", type=int, default=5)
    ap.add_argument("--burst", type=int, default=100)
    ap.add_argument("--cpus", default=None, help="TRAINJOB_LOCAL_CPUS for the burst")
    ap.add_argument("--no-browser", action="store_true")
    args = ap.parse_args()
    counts = [int(c) for c in args.counts.split(",")]
    la = os.getloadavg()
    print(f"machine: {os.cpu_count()} CPUs, {Path('/proc/meminfo').read_text().split()[1]} kB, "
          f"load {la[0]:.1f} {la[1]:.1f} {la[2]:.1f} at the start")  # fmt: skip
    os.environ["TRAINJOB_LOCAL_CPUS"] = str(args.running + 64)  # the running ones all run
    with tempfile.TemporaryDirectory(prefix="trainjob-local-scale-") as d:
        tmp = Path(d)
        home = tmp / "home"
        try:
            listing(home, counts, args.repeat, args.running)
            if not args.no_browser:
                dashboard(tmp / "dash-home", counts, max(3, args.repeat // 2))
        finally:
            ex = LocalExecutor(home)
            for i in range(args.running):
                ex.delete(f"live-{i}")
        os.environ.pop("TRAINJOB_LOCAL_CPUS", None)
        if args.burst:
            burst(tmp, args.burst, args.cpus)
    return 0


def dashboard(home: Path, totals: list[int], repeat: int) -> None:
    """The Jobs page at each count, on a fresh home seeded as the listing's."""
    seeder = Seeder(TrainerClient(LocalBackendConfig(home=home)))
    if not Path(CHROMIUM).exists():
        print("dashboard: no chromium here (bash scripts/setup-browser.sh): skipped")
        return
    from playwright.sync_api import sync_playwright
    from tests.e2e.dashboard_browser import CHROMIUM_ARGS, start_dashboard, stop

    print(f"dashboard: the Jobs page in headless Chromium, {repeat} loads each (median ms)")
    d = start_dashboard(home)
    rows = []
    try:
        with sync_playwright() as p, load("the dashboard"):
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            try:
                for total in totals:
                    seeder.add(total - seeder.count)
                    time.sleep(1.2)  # the dashboard's listing is fresh after its 1 s interval
                    drawn = min(total, PAGE)
                    shown, floor, floor_all = [], [], []
                    for _ in range(repeat):
                        page = browser.new_page()
                        t = time.perf_counter()
                        page.goto(d.url + "/")
                        page.wait_for_selector(
                            f"#jobs tr:nth-child({drawn})", state="attached", timeout=120_000
                        )
                        while not (page.text_content("#count") or "").startswith(f"{total} of"):
                            time.sleep(0.005)
                        shown.append((time.perf_counter() - t) * 1000)
                        page.close()
                        for rows_, out in ((drawn, floor), (total, floor_all)):
                            page = browser.new_page()
                            t = time.perf_counter()
                            page.set_content(static_table(rows_))
                            page.evaluate("document.querySelectorAll('tr').length")
                            out.append((time.perf_counter() - t) * 1000)
                            page.close()
                    rows.append(
                        (total, drawn, statistics.median(shown), statistics.median(floor),
                         statistics.median(floor_all))
                    )  # fmt: skip
            finally:
                browser.close()
    finally:
        stop(d)
    print(f"  {'jobs':>6} {'drawn':>5} {'Jobs page':>9} {'static, as drawn':>16} {'x static':>8} "
          f"{'static, every row':>17}")  # fmt: skip
    for total, drawn, shown_ms, floor_ms, all_ms in rows:
        print(f"  {total:6d} {drawn:5d} {shown_ms:9.0f} {floor_ms:16.0f} {shown_ms / floor_ms:7.1f}x "
              f"{all_ms:17.0f}")  # fmt: skip
    print(f"  growth Jobs page  {growth([r[2] for r in rows], totals)}")


if __name__ == "__main__":
    raise SystemExit(main())
