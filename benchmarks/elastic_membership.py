"""What a lost node costs an elastic job locally, against a full restart of the job from its
checkpoint.

Both runs train ``examples/torch-elastic/train.py`` (3 nodes, gloo, a checkpoint every step) on the
local backend, in this one run, and SIGKILL node 2's process group once node 0's log shows a step
at world size 3:

* **elastic**: ``examples/torch-elastic.yaml`` (minNodes 2, maxNodes 3): the surviving torchrun
  agents rendezvous again and their new workers resume from the checkpoint; timed from the kill
  to node 0's first step at world size 2;
* **restart**: the same TrainJob without ``elasticPolicy``, on a copy of ``torch-distributed`` with
  ``failurePolicy.maxRestarts: 1``: the JobSet is restarted, every node's torchrun starts again
  and resumes from the checkpoint; timed from the kill to node 0's first step of the new attempt.

    .venv/bin/python benchmarks/elastic_membership.py [--repeat 1]
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import statistics
import tempfile
import time
from pathlib import Path

from trainjob.api.load import load_file, parse
from trainjob.api.trainer import ClusterTrainingRuntime, TrainingRuntime, TrainJob
from trainjob.executor.catalog import builtin_runtimes
from trainjob.local import LocalExecutor

ROOT = Path(__file__).parents[1]
NAME = "torch-elastic"


def _job(elastic: bool) -> TrainJob:
    (tj,) = load_file(ROOT / "examples" / "torch-elastic.yaml")
    assert isinstance(tj, TrainJob) and tj.spec.trainer is not None
    env = tj.spec.trainer.env or []
    tj.spec.trainer.env = [*env, type(env[0])(name="STEPS", value="400")]
    if not elastic:
        tj.spec.trainer.elastic_policy = None
        tj.spec.runtime_ref.name = "restartable"
        tj.spec.runtime_ref.kind = "TrainingRuntime"
    return tj


def _restartable() -> TrainingRuntime:
    doc = builtin_runtimes()["torch-distributed"].to_dict()
    assert isinstance(builtin_runtimes()["torch-distributed"], ClusterTrainingRuntime)
    doc["kind"] = "TrainingRuntime"
    doc["metadata"] = {"name": "restartable", "namespace": "default"}
    doc["spec"]["template"]["spec"]["failurePolicy"] = {"maxRestarts": 1}
    rt = parse(doc)
    assert isinstance(rt, TrainingRuntime)
    return rt


def _log(ex: LocalExecutor) -> str:
    path = Path(ex.log_path(NAME, "default", "node", 0))
    return path.read_text(errors="replace") if path.is_file() else ""


def _wait(ex: LocalExecutor, pattern: str, timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    while not re.search(pattern, _log(ex)):
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out waiting for {pattern!r}:\n{_log(ex)[-2000:]}")
        time.sleep(0.05)


def _kill_node_2(ex: LocalExecutor) -> None:
    pod = next(p for p in ex.store.pods("default", NAME) if p.job == "node" and p.idx == 2)
    assert pod.pid
    os.killpg(os.getpgid(pod.pid), signal.SIGKILL)


def once(elastic: bool) -> float:
    with tempfile.TemporaryDirectory(prefix="elastic-bench-") as home:
        ex = LocalExecutor(Path(home))
        runtimes = () if elastic else (_restartable(),)
        ex.submit(_job(elastic), runtimes, cwd=str(ROOT / "examples"))
        try:
            _wait(ex, r"step \d+ world size 3 loss")
            t0 = time.monotonic()
            _kill_node_2(ex)
            if elastic:
                _wait(ex, r"step \d+ world size 2 loss")
            else:  # the restarted attempt's log: resumed, then a step
                _wait(ex, r"from step [1-9]\d*[\s\S]*step \d+ world size 3 loss")
            return time.monotonic() - t0
        finally:
            ex.delete(NAME, "default", purge=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    results: dict[str, list[float]] = {"elastic": [], "restart": []}
    for _ in range(args.repeat):
        results["elastic"].append(once(elastic=True))
        results["restart"].append(once(elastic=False))
    for what, times in results.items():
        print(
            f"{what:8s} kill -> training again: median {statistics.median(times):.1f} s "
            f"(min {min(times):.1f} s, {len(times)} runs)"
        )


if __name__ == "__main__":
    main()
