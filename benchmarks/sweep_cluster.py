"""A cluster sweep's hand-off: from one trial's end to the next trial's TrainJob, through
trainjob's controller on a real kube-apiserver (the integration tests' control plane).

A sweep of ``--trials`` trials, one at a time (``parallelTrials: 1``, random search), on the
``torch-distributed`` runtime. No pods run (no kubelet): as the integration tests do, this script
plays the trainer and JobSet, writing each trial's last report (``status.trainerStatus``) and
then its JobSet's Completed condition. Measured per trial, from that JobSet write:

- **TrainJob Complete**: until the trial's TrainJob has its Complete condition (the TrainJob
  reconciler's part, which a TrainJob run by hand pays too);
- **hand-off**: until the next trial's TrainJob exists (seen by a watch), i.e. the TrainJob's
  part plus the OptimizationJob reconciler's pass (engine, create);

printed as median, p95 and max, with the machine's load average. The sweep's own part is the
difference.

    .venv/bin/python benchmarks/sweep_cluster.py [--trials 8] [--kubeconfig KC]

Without ``--kubeconfig`` a private control plane is started with ``hack/testenv`` and stopped at
the end. Target: the sweep's part well under the TrainJob's own.

On the 2-core development machine (2026-12-04, 12 trials, shared with other work)::

    12 trials, one at a time; load average 2.5
                                        median s      p95      max
    JobSet Completed -> TrainJob Complete     0.011    0.012    0.013
    JobSet Completed -> next trial         0.018    0.021    0.021
    the sweep's own part (hand-off minus Complete): median 0.007 s

(8 trials at load 3.5: 0.016 and 0.025 s, the sweep's part 0.011 s.) A real trial's next start
adds what any TrainJob pays: its JobSet, scheduling, the pods' start.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from benchmarks.controller import start_testenv, stop_testenv  # noqa: E402
from tests.integration import controller_harness  # noqa: E402

from trainjob.kube import Client  # noqa: E402
from trainjob.kube import resources as r  # noqa: E402

Obj = dict[str, Any]
LABEL = "trainer.kubeflow.org/optimization-job"


def sweep(name: str, trials: int) -> Obj:
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "OptimizationJob",
        "metadata": {"name": name},
        "spec": {
            "objectives": [{"metric": "loss"}],
            "searchAlgorithm": {"random": {"seed": 1}},
            "parameters": [{"name": "lr", "searchSpace": {"uniform": {"min": "0.1", "max": "1"}}}],
            "numTrials": trials,
            "parallelTrials": 1,
            "trainJobTemplate": {
                "spec": {
                    "runtimeRef": {"name": "torch-distributed"},
                    "trainer": {"args": ["--lr={{.lr}}"]},
                }
            },
        },
    }


class Seen:
    """When each TrainJob of the namespace was first seen, and when it was first Complete."""

    def __init__(self, kube: Client, ns: str) -> None:
        self.created: dict[str, float] = {}
        self.complete: dict[str, float] = {}
        self.changed = threading.Condition()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(kube, ns), daemon=True)
        self._thread.start()

    def _run(self, kube: Client, ns: str) -> None:
        while not self._stop.is_set():
            for ev in kube.watch(r.TRAINJOBS, ns, timeout_seconds=30):
                if ev.type == "BOOKMARK":
                    continue
                now = time.perf_counter()
                name = ev.object["metadata"]["name"]
                with self.changed:
                    self.created.setdefault(name, now)
                    conds = (ev.object.get("status") or {}).get("conditions") or ()
                    if any(k["type"] == "Complete" and k["status"] == "True" for k in conds):
                        self.complete.setdefault(name, now)
                    self.changed.notify_all()
                if self._stop.is_set():
                    return

    def wait(self, check: Any, timeout: float = 60) -> float:
        deadline = time.perf_counter() + timeout
        with self.changed:
            while True:
                got = check()
                if got is not None:
                    return float(got)
                left = deadline - time.perf_counter()
                if left <= 0:
                    raise SystemExit("timed out")
                self.changed.wait(left)

    def stop(self) -> None:
        self._stop.set()


def finish(kube: Client, name: str, ns: str, loss: str) -> float:
    """The trainer's last report, then the JobSet's Completed condition; when that was sent."""
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    kube.patch_status(
        r.TRAINJOBS,
        name,
        ns,
        {"trainerStatus": {"metrics": [{"name": "loss", "value": loss}], "lastUpdatedTime": stamp}},
    )
    controller_harness.wait_for(lambda: kube.get_or_none(r.JOBSETS, name, ns), what="JobSet")
    sent = time.perf_counter()
    kube.patch_status(
        r.JOBSETS,
        name,
        ns,
        {
            "conditions": [
                {
                    "type": "Completed",
                    "status": "True",
                    "reason": "AllJobsCompleted",
                    "message": "done",
                    "lastTransitionTime": stamp,
                }
            ]
        },
    )
    return sent


def pct(values: list[float], p: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, round(p * (len(values) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trials", type=int, default=8)
    parser.add_argument("--kubeconfig")
    args = parser.parse_args()
    state = None
    kubeconfig = args.kubeconfig
    if kubeconfig is None:
        print("starting a private control plane (hack/testenv) ...", flush=True)
        state, kc = start_testenv()
        kubeconfig = str(kc)
    kube = Client.from_config(kubeconfig)
    ctl = None
    try:
        kube.apply(controller_harness.builtin_runtime(), field_manager="trainjob-bench")
        ctl = controller_harness.start_controller(controller_harness.Apiserver(Path(kubeconfig)))
        ns = f"sweep-bench-{uuid.uuid4().hex[:6]}"
        kube.create(
            r.NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}
        )
        seen = Seen(kube, ns)
        kube.create(r.OPTIMIZATION_JOBS, sweep("bench", args.trials), ns)
        complete: list[float] = []
        hand_off: list[float] = []
        for i in range(args.trials):
            name = f"bench-{i}"
            seen.wait(lambda name=name: seen.created.get(name))
            sent = finish(kube, name, ns, str(1.0 / (i + 1)))
            complete.append(seen.wait(lambda name=name: seen.complete.get(name)) - sent)
            if i + 1 < args.trials:
                nxt = f"bench-{i + 1}"
                hand_off.append(seen.wait(lambda nxt=nxt: seen.created.get(nxt)) - sent)
        seen.stop()
        load = os.getloadavg()[0]
        print(f"{args.trials} trials, one at a time; load average {load:.1f}")
        print(f"{'':<34} {'median s':>9} {'p95':>8} {'max':>8}")
        for label, xs in (
            ("JobSet Completed -> TrainJob Complete", complete),
            ("JobSet Completed -> next trial", hand_off),
        ):
            print(f"{label:<34} {statistics.median(xs):9.3f} {pct(xs, 0.95):8.3f} {max(xs):8.3f}")
        sweep_part = [h - c for h, c in zip(hand_off, complete, strict=False)]
        print(
            f"the sweep's own part (hand-off minus Complete): median {statistics.median(sweep_part):.3f} s"
        )
    finally:
        if ctl is not None:
            ctl.stop()
            ctl.forget_webhooks()
        kube.close()
        if state is not None:
            stop_testenv(state)


if __name__ == "__main__":
    main()
