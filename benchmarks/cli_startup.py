"""How long the ``trainjob`` command takes to start and answer, beside ``python -c pass``.

Each command runs as a user runs it (the ``trainjob`` console script of this venv, a process of
its own, output to a pipe), alternated with the reference ``python -c pass`` of the same
interpreter pair by pair, so the ratio holds on a machine whose speed drifts: the reference is
measured in the same run. ``get jobs`` reads a local store seeded with 10 finished 2-node jobs
(``benchmarks/sdk.py``'s seeding: real TrainJobs and Plans, no process started).

    .venv/bin/python benchmarks/cli_startup.py [--repeat 15] [--jobs 10]

Target: ``trainjob get jobs`` under 150 ms on the local backend (the median), which is about 3-5x
``python -c pass`` on the dev machine. Prints, per command: median, min and max wall ms, and the
median of the pairwise ratios to ``python -c pass``, and the median CPU ms (user + system) with
its ratio to the reference's: the steadier number on a shared machine.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

TARGET_MS = 150.0
HERE = Path(__file__).resolve().parent
BIN = Path(sys.executable).parent


def _load_seed() -> Any:
    spec = importlib.util.spec_from_file_location("bench_sdk", HERE / "sdk.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def once(argv: list[str], env: dict[str, str]) -> float:
    """Wall ms of one run (its CPU ms are added to :data:`CPU_MS`)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    res = subprocess.run(argv, env=env, capture_output=True, check=False)
    took = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    CPU_MS.append((after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000)
    if res.returncode != 0:
        raise SystemExit(
            f"{' '.join(argv)} failed ({res.returncode}): {res.stderr.decode()[-500:]}"
        )
    return took * 1000


CPU_MS: list[float] = []
"""The user + system CPU ms of each run, in order: unlike wall time, hardly changed by a busy
machine (on 2 cores shared by many, wall time is mostly waiting for a core)."""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--jobs", type=int, default=10)
    args = parser.parse_args()

    home = Path(tempfile.mkdtemp(prefix="trainjob-bench-cli-"))
    bench_sdk = _load_seed()
    from trainjob import LocalBackendConfig, TrainerClient

    bench_sdk.seed(TrainerClient(LocalBackendConfig(home=home)), args.jobs)
    env = {k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "TRAINJOB_BACKEND")}
    env["TRAINJOB_HOME"] = str(home)
    trainjob = str(BIN / "trainjob")
    reference = [sys.executable, "-c", "pass"]
    commands = {
        "trainjob version": [trainjob, "version"],
        f"trainjob get jobs ({args.jobs} jobs)": [trainjob, "get", "jobs"],
        "trainjob get runtimes": [trainjob, "get", "runtimes"],
        "trainjob --help": [trainjob, "--help"],
    }
    for argv in [reference, *commands.values()]:  # warm the page cache and bytecode
        once(argv, env)
    print(f"trainjob CLI start-up, {args.repeat} runs each, alternated with `python -c pass`")
    print(f"machine: {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}")
    header = (
        f"{'command':<34}{'median ms':>10}{'min':>8}{'max':>8}{'x python -c pass':>18}"
        f"{'cpu ms':>8}{'x':>7}"
    )
    print(header)
    print("-" * len(header))
    refs_all: list[float] = []
    ref_cpus: list[float] = []
    results = {}
    for label, argv in commands.items():
        times, refs, cpus = [], [], []
        for _ in range(args.repeat):
            refs.append(once(reference, env))
            ref_cpus.append(CPU_MS[-1])
            times.append(once(argv, env))
            cpus.append(CPU_MS[-1])
        refs_all += refs
        ratios = [t / r for t, r in zip(times, refs, strict=True)]
        results[label] = statistics.median(times)
        cpu, ref_cpu = statistics.median(cpus), statistics.median(ref_cpus)
        print(
            f"{label:<34}{statistics.median(times):>10.0f}{min(times):>8.0f}{max(times):>8.0f}"
            f"{statistics.median(ratios):>17.1f}x{cpu:>8.0f}{cpu / max(ref_cpu, 1.0):>6.1f}x"
        )
    print(
        f"{'python -c pass (reference)':<34}{statistics.median(refs_all):>10.0f}"
        f"{min(refs_all):>8.0f}{max(refs_all):>8.0f}{1.0:>17.1f}x"
        f"{statistics.median(ref_cpus):>8.0f}{1.0:>6.1f}x"
    )
    get = results[f"trainjob get jobs ({args.jobs} jobs)"]
    verdict = "meets" if get < TARGET_MS else "misses"
    print(f"target: trainjob get jobs < {TARGET_MS:.0f} ms: {verdict} ({get:.0f} ms)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
