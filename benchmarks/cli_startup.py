"""How long the ``trainjob`` command takes to start and answer, beside ``python -c pass``.

Each command runs as a user runs it (the ``trainjob`` console script of this venv, a process of
its own, output to a pipe). Every round runs each command once, each right after a run of the
reference ``python -c pass`` of the same interpreter, so the ratios hold on a machine whose speed
drifts: the reference is measured in the same run, pair by pair. ``get jobs`` reads an empty home
and a local store seeded with 20 finished 2-node jobs (``benchmarks/sdk.py``'s seeding: real
TrainJobs and Plans, no process started).

    .venv/bin/python benchmarks/cli_startup.py [--repeat 15] [--jobs 20]

Target: ``trainjob get jobs`` under 150 ms on the local backend (the median wall time), about
3-7x ``python -c pass``. Prints, per command: the median, p95 and min wall ms, the median of the
pairwise ratios to ``python -c pass`` (``x ref``), the median CPU ms (user + system) with its
ratio to the reference's, and the median of the CPU ms each run took above the reference run
just before it (``cpu-ref``): the steadier numbers on a shared machine, where wall time is
partly waiting for a core. ``logs -f --help`` is a help screen typer prints (an option before
``--help``), for scale.

On the 2-core development machine, shared and busy (load 11.8, 9 rounds, 2026-12-02)::

    command                            wall ms   p95   min  x ref  cpu ms  x ref cpu-ref
    trainjob version                        75   124    44   2.4x      27   2.1x      14
    trainjob get jobs (empty home)         104   131    72   2.9x      41   3.3x      28
    trainjob get jobs (20 jobs)            126   136    86   3.7x      44   3.5x      31
    trainjob get runtimes                  104   169    84   3.5x      41   3.3x      29
    trainjob --help                         72    94    48   2.0x      27   2.1x      14
    trainjob get --help                     71   107    50   2.1x      27   2.1x      14
    trainjob logs --help (typer)           178   318   120   6.3x      84   6.6x      71
    python -c pass (the reference)          35    51    20   1.0x      13   1.0x       0

Before (load 13.3, the same day): ``get jobs`` 75 ms of CPU (20 jobs, and an empty home),
``get runtimes`` 76, ``version`` 44, ``--help`` 198, ``python -c pass`` 18. Instruction counts
(``valgrind --tool=cachegrind``, which a loaded machine does not change; ``python -c pass``
40.3M): ``get jobs`` of an empty home 176.9M -> 142.5M, ``--help`` 478M -> 75.0M, ``version``
99M -> 76.5M (the last 14M of each from importing no typing, after the table above). A rerun
at load 15.2: ``get jobs`` 51-54 ms of CPU, 35-39 above ``python -c pass`` (15), 241-270 ms
wall (``python -c pass`` 76); ``version`` 26, ``--help`` 28, ``get --help`` 25.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import resource
import shutil
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


def p95(values: list[float]) -> float:
    """The 95th percentile (nearest rank): the slow end a user meets now and then."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(0.95 * len(ordered)) - 1))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--jobs", type=int, default=20)
    args = parser.parse_args()

    empty = Path(tempfile.mkdtemp(prefix="trainjob-bench-cli-empty-"))
    home = Path(tempfile.mkdtemp(prefix="trainjob-bench-cli-"))
    bench_sdk = _load_seed()
    from trainjob import LocalBackendConfig, TrainerClient

    bench_sdk.seed(TrainerClient(LocalBackendConfig(home=home)), args.jobs)
    base = {k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "TRAINJOB_BACKEND")}
    env = {**base, "TRAINJOB_HOME": str(home)}
    env_empty = {**base, "TRAINJOB_HOME": str(empty)}
    trainjob = str(BIN / "trainjob")
    reference = [sys.executable, "-c", "pass"]
    get_label = f"trainjob get jobs ({args.jobs} jobs)"
    commands: dict[str, tuple[list[str], dict[str, str]]] = {
        "trainjob version": ([trainjob, "version"], env),
        "trainjob get jobs (empty home)": ([trainjob, "get", "jobs"], env_empty),
        get_label: ([trainjob, "get", "jobs"], env),
        "trainjob get runtimes": ([trainjob, "get", "runtimes"], env),
        "trainjob --help": ([trainjob, "--help"], env),
        "trainjob get --help": ([trainjob, "get", "--help"], env),
        "trainjob logs --help (typer)": ([trainjob, "logs", "-f", "--help"], env),
    }
    # Warm the page cache and the bytecode: these runs may write .pyc files (PYTHONDONTWRITEBYTECODE
    # dropped), as pip's install compiles them for a user; a source file changed since its .pyc
    # would otherwise be compiled again on every run (an edited checkout's modules, 10-15 ms each).
    for argv, e in [(reference, env), *commands.values()]:
        once(argv, {k: v for k, v in e.items() if k != "PYTHONDONTWRITEBYTECODE"})
    times: dict[str, list[float]] = {label: [] for label in commands}
    cpus: dict[str, list[float]] = {label: [] for label in commands}
    ratios: dict[str, list[float]] = {label: [] for label in commands}
    ref_cpu_of: dict[str, list[float]] = {label: [] for label in commands}
    refs: list[float] = []
    ref_cpus: list[float] = []
    for _ in range(args.repeat):  # round-robin: every command in every round, each after a ref
        for label, (argv, e) in commands.items():
            ref = once(reference, e)
            refs.append(ref)
            ref_cpus.append(CPU_MS[-1])
            ref_cpu_of[label].append(CPU_MS[-1])
            took = once(argv, e)
            times[label].append(took)
            cpus[label].append(CPU_MS[-1])
            ratios[label].append(took / ref)
    print(f"trainjob CLI start-up, {args.repeat} rounds, each command after a `python -c pass`")
    print(f"machine: {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}")
    header = (
        f"{'command':<34}{'wall ms':>8}{'p95':>6}{'min':>6}{'x ref':>7}"
        f"{'cpu ms':>8}{'x ref':>7}{'cpu-ref':>8}"
    )
    print(header)
    print("-" * len(header))
    ref_cpu = statistics.median(ref_cpus)
    for label in commands:
        cpu = statistics.median(cpus[label])
        above = statistics.median(
            c - r for c, r in zip(cpus[label], ref_cpu_of[label], strict=True)
        )
        print(
            f"{label:<34}{statistics.median(times[label]):>8.0f}{p95(times[label]):>6.0f}"
            f"{min(times[label]):>6.0f}{statistics.median(ratios[label]):>6.1f}x"
            f"{cpu:>8.0f}{cpu / max(ref_cpu, 1.0):>6.1f}x{above:>8.0f}"
        )
    print(
        f"{'python -c pass (the reference)':<34}{statistics.median(refs):>8.0f}{p95(refs):>6.0f}"
        f"{min(refs):>6.0f}{1.0:>6.1f}x{ref_cpu:>8.0f}{1.0:>6.1f}x{0:>8.0f}"
    )
    print(
        "x ref: the median of each run's ratio to the python -c pass run just before it; "
        "cpu-ref: the median of the CPU ms each run took above that run's"
    )
    for label in ("trainjob get jobs (empty home)", get_label):
        got = statistics.median(times[label])
        verdict = "meets" if got < TARGET_MS else "misses"
        print(f"target: {label} < {TARGET_MS:.0f} ms: {verdict} ({got:.0f} ms)")
    for made in (empty, home):  # the seeded homes (no process was started in them)
        shutil.rmtree(made, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
