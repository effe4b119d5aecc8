"""A local sweep's hand-off time and overhead, beside the same trials run by hand.

Each round runs ``--trials`` trials one at a time (``parallel_trials=1``) twice, in the same
home, on a plain-Python runtime, each trial a function that only writes when it started and
ended (so what is measured is trainjob, not training):

- as an OptimizationJob (``OptimizerClient.optimize``, random search), its sweep supervisor
  creating each trial when the one before has finished;
- by hand: ``TrainerClient.train`` of the same function, ``wait_for_job_status`` (polling every
  0.05 s), then the next: the reference, measured in the same run.

Printed per way: the hand-off (from one trial's function ending to the next one's starting:
the median, p95 and max over every pair of the round), and the whole run's wall time per trial;
the sweep's overhead is its time per trial minus the reference's. The hand-off is mostly a new
TrainJob's start (its supervisor process, the pod's interpreter), which both ways pay; what the
sweep adds is noticing the end (its supervisor waits on the store's ``data_version``, every
0.02 s) and one pass of the loop. The machine's load average is printed with the numbers: on a
shared machine every process start is slower.

    .venv/bin/python benchmarks/sweep.py [--trials 6] [--rounds 2]

Target: the hand-off well under 1 s, and the sweep's time per trial within 0.1 s of by hand.

On the 2-core development machine (2026-12-04, 3 rounds of 6 trials)::

    load average 1.7                hand-off s      p95      max  s per trial
    sweep (OptimizerClient)              0.347    0.376    0.400        0.427
    by hand (TrainerClient)              0.318    0.321    0.324        0.316
    the sweep's first hand-off (its supervisor loading): median 0.719 s
    sweep overhead: +0.111 s per trial (1.35x by hand)

The hand-off is 0.03 s behind by hand (the 0.02 s wait on the store, one pass); most of the
overhead per trial is the first hand-off, while the sweep supervisor loads (a trial that runs
longer than that hides it). At load 12.7 (the same day): 1.22 s against 1.42 by hand.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from tests.e2e.sweep_funcs import quadratic  # noqa: E402 (the repository's root first)
from tests.e2e.test_sweeps_local import PLAIN  # noqa: E402

from trainjob import CustomTrainer, LocalBackendConfig, TrainerClient, TrainJobTemplate  # noqa: E402
from trainjob.api.load import parse  # noqa: E402
from trainjob.optimizer import OptimizerClient, RandomSearch, Search, TrialConfig  # noqa: E402


def marks_of(d: Path) -> list[dict[str, Any]]:
    return sorted((json.loads(p.read_text()) for p in d.glob("*.json")), key=lambda m: m["start"])


def hand_offs(found: list[dict[str, Any]]) -> list[float]:
    return [b["start"] - a["end"] for a, b in itertools.pairwise(found)]


def by_sweep(client: OptimizerClient, trials: int, marks: Path) -> float:
    start = time.perf_counter()
    name = client.optimize(
        trial_template=TrainJobTemplate(
            trainer=CustomTrainer(func=quadratic, func_args={"marks": str(marks)}),
            runtime="plain-python",
        ),
        trial_config=TrialConfig(num_trials=trials, parallel_trials=1),
        search_space={"x": Search.uniform(-1.0, 1.0)},
        algorithm=RandomSearch(random_state=1),
    )
    client.wait_for_job_status(name, timeout=600, polling_interval=0.05)
    took = time.perf_counter() - start
    client.delete_job(name)
    return took


def by_hand(client: TrainerClient, trials: int, marks: Path) -> float:
    start = time.perf_counter()
    names = []
    for i in range(trials):
        name = client.train(
            runtime="plain-python",
            trainer=CustomTrainer(func=quadratic, func_args={"x": i / trials, "marks": str(marks)}),
        )
        client.wait_for_job_status(name, timeout=600, polling_interval=0.05)
        names.append(name)
    took = time.perf_counter() - start
    for name in names:
        client.delete_job(name)
    return took


def summary(label: str, gaps: list[float], per_trial: float) -> str:
    gaps = sorted(gaps)
    p95 = gaps[min(len(gaps) - 1, round(0.95 * (len(gaps) - 1)))]
    return (
        f"{label:<28} {statistics.median(gaps):8.3f} {p95:8.3f} {max(gaps):8.3f} {per_trial:12.3f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trials", type=int, default=6)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="trainjob-sweep-bench-"))
    cfg = LocalBackendConfig(home=root / "home", cwd=str(root))
    sweeps, hand = OptimizerClient(cfg), TrainerClient(cfg)
    sweeps.sweeps.trials.apply_runtime(parse(PLAIN))
    sweep_gaps: list[float] = []
    hand_gaps: list[float] = []
    sweep_first: list[float] = []
    sweep_t: list[float] = []
    hand_t: list[float] = []
    for r in range(args.rounds):
        for way in ("sweep", "hand") if r % 2 == 0 else ("hand", "sweep"):
            marks = root / f"marks-{r}-{way}"
            marks.mkdir()
            if way == "sweep":
                sweep_t.append(by_sweep(sweeps, args.trials, marks) / args.trials)
                gaps = hand_offs(marks_of(marks))
                sweep_first.append(gaps[0])
                sweep_gaps += gaps[1:]  # the first waits for the sweep supervisor to load
            else:
                hand_t.append(by_hand(hand, args.trials, marks) / args.trials)
                hand_gaps += hand_offs(marks_of(marks))
    load = os.getloadavg()[0]
    print(f"{args.rounds} rounds of {args.trials} trials, one at a time; load average {load:.1f}")
    print(f"{'':<28} {'hand-off s':>8} {'p95':>8} {'max':>8} {'s per trial':>12}")
    print(summary("sweep (OptimizerClient)", sweep_gaps, statistics.median(sweep_t)))
    print(summary("by hand (TrainerClient)", hand_gaps, statistics.median(hand_t)))
    print(
        f"the sweep's first hand-off (its supervisor loading): median "
        f"{statistics.median(sweep_first):.3f} s"
    )
    over = statistics.median(sweep_t) - statistics.median(hand_t)
    print(
        f"sweep overhead: {over:+.3f} s per trial ({statistics.median(sweep_t) / statistics.median(hand_t):.2f}x by hand)"
    )


if __name__ == "__main__":
    main()
