"""``python -m tests.redteam [-k SUBSTRING] [-j N] [--timeout S] [-v]``: run the red team and
print the counts (see tests/redteam/__init__.py). Each case runs in a child process of its own
with a fresh work directory; a case still running after ``--timeout`` is a hang. Whatever a case
left running (processes with its TRAINJOB_HOME in their environment) is killed and counted."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from tests.redteam.cases import CLASSES, Case, Verdict
from tests.redteam.registry import all_cases

ROOT = Path(__file__).resolve().parents[2]


def leftovers(marker: bytes) -> list[int]:
    """Pids of processes whose environment holds ``marker`` (a case's TRAINJOB_HOME=...)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as f:
                env = f.read()
        except OSError:
            continue
        if marker in env.split(b"\0"):
            found.append(int(entry))
    return found


def run_case(case: Case, timeout: float) -> tuple[Case, Verdict, str, float]:
    work = Path(tempfile.mkdtemp(prefix=f"redteam-{case.id[:40]}-"))
    marker = f"TRAINJOB_HOME={work / 'home'}".encode()
    env = {**os.environ, "TRAINJOB_HOME": str(work / "home"), "PYTHONPATH": f"{ROOT}:{ROOT}/src"}
    start = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.redteam.one", case.id, str(work)],
        cwd=work, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        start_new_session=True,
    )  # fmt: skip
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        verdict, detail = Verdict.HANG, f"still running after {timeout:.0f}s"
    else:
        text = out.decode(errors="replace")
        line = next((ln for ln in text.splitlines() if ln.startswith("REDTEAM ")), None)
        if line is None:
            verdict, detail = Verdict.TRACEBACK, text[-2000:]
        else:
            got = json.loads(line[len("REDTEAM ") :])
            verdict, detail = Verdict(got["verdict"]), got["detail"]
    took = time.monotonic() - start
    left = leftovers(marker)
    for pid in left:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    if left and verdict in (Verdict.CLEAR, Verdict.SURVIVED):
        verdict = Verdict.ACCEPTED if case.kind == "input" else Verdict.LOST
        detail += f"\n(left running: pids {left})"
    subprocess.run(["rm", "-rf", str(work)], check=False)
    return case, verdict, detail, took


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.redteam")
    parser.add_argument("-k", action="append", default=[], help="only cases whose id has this")
    parser.add_argument("-j", type=int, default=2, help="cases at once")
    parser.add_argument("--timeout", type=float, default=90.0)
    parser.add_argument("--kind", choices=["input", "fault"])
    parser.add_argument("-v", action="store_true", help="print every case, not only failures")
    args = parser.parse_args()
    cases = [
        c for c in all_cases().values()
        if (not args.k or any(k in c.id for k in args.k)) and (args.kind in (None, c.kind))
    ]  # fmt: skip
    results = []
    with ThreadPoolExecutor(max_workers=args.j) as pool:
        for case, verdict, detail, took in pool.map(lambda c: run_case(c, args.timeout), cases):
            results.append((case, verdict))
            good = verdict in (Verdict.CLEAR, Verdict.SURVIVED)
            if args.v or not good:
                first = detail.strip().splitlines()[0] if detail.strip() else ""
                print(
                    f"{'ok ' if good else 'BAD'} {verdict.value:16} {took:5.1f}s  {case.id}: {first[:160]}",
                    flush=True,
                )
    print()
    print(
        f"{'class':34} {'tried':>5} {'clear':>6} {'tracebacks':>10} {'hangs':>5} {'accepted':>8} {'faults':>6} {'survived':>8}"
    )
    totals: Counter[str] = Counter()
    for cls, title in CLASSES.items():
        mine = [(c, v) for c, v in results if c.cls == cls]
        if not mine:
            continue
        n = Counter(v for _, v in mine)
        inputs = sum(1 for c, _ in mine if c.kind == "input")
        faults = len(mine) - inputs
        row = {
            "tried": inputs, "clear": n[Verdict.CLEAR], "tracebacks": n[Verdict.TRACEBACK] if inputs else 0,
            "hangs": n[Verdict.HANG] if inputs else 0, "accepted": n[Verdict.ACCEPTED],
            "faults": faults, "survived": n[Verdict.SURVIVED],
        }  # fmt: skip
        if faults and not inputs:
            row["tracebacks"] = row["hangs"] = 0
        totals.update(row)
        print(
            f"{cls:>2} {title:31} {row['tried']:5} {row['clear']:6} {row['tracebacks']:10} {row['hangs']:5} {row['accepted']:8} {faults:6} {row['survived']:8}"
        )
    print()
    print(
        f"bad inputs: {totals['tried']} tried, {totals['clear']} clear errors, "
        f"{totals['tracebacks']} tracebacks, {totals['hangs']} hangs, "
        f"{totals['accepted']} wrongly accepted"
    )
    print(f"faults: {totals['faults']} tried, {totals['survived']} survived with nothing lost")
    bad = [c for c, v in results if v not in (Verdict.CLEAR, Verdict.SURVIVED)]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
