"""Elastic PyTorch (KEP-2903) on the local backend, with real torchrun elastic agents over gloo.

``examples/torch-elastic.yaml`` (3 nodes, minNodes 2, maxNodes 3) runs; once node 0's log shows
world size 3, node 2's process group is SIGKILLed mid-training: the other agents rendezvous again,
the workers resume from the checkpoint with world size 2, the loss keeps falling and the job ends
Complete, with a NodeLost Event and no JobSet restart. Killing two nodes leaves one, below
minNodes: the job fails saying so.
"""

from __future__ import annotations

import importlib.util
import os
import re
import signal
import time
from pathlib import Path

import pytest

from trainjob.api.load import load_file
from trainjob.api.trainer import TrainJob
from trainjob.errors import InvalidError
from trainjob.local import LocalExecutor

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="needs torch"),
]
ROOT = Path(__file__).parents[2]
NAME = "torch-elastic"
STEPS = 120  # 0.2 s each: a kill, its rendezvous and a scale all land mid-training


def _job(steps: int) -> TrainJob:
    (tj,) = load_file(ROOT / "examples" / "torch-elastic.yaml")
    assert isinstance(tj, TrainJob) and tj.spec.trainer is not None
    env = tj.spec.trainer.env or []
    tj.spec.trainer.env = [*env, type(env[0])(name="STEPS", value=str(steps))]
    return tj


def _wait_for(ex: LocalExecutor, pattern: str, idx: int = 0, timeout: float = 180) -> str:
    """Poll node ``idx``'s log until ``pattern`` shows; the log."""
    deadline = time.monotonic() + timeout
    while True:
        log = Path(ex.log_path(NAME, "default", "node", idx))
        text = log.read_text(errors="replace") if log.is_file() else ""
        if re.search(pattern, text):
            return text
        state = ex.store.job("default", NAME)
        assert state is not None and state.phase not in ("Complete", "Failed"), (
            f"ended before {pattern!r}: {state and state.message}\n{text[-3000:]}"
        )
        assert time.monotonic() < deadline, f"no {pattern!r} in node-{idx}'s log:\n{text[-3000:]}"
        time.sleep(0.2)


def _kill_node(ex: LocalExecutor, idx: int) -> None:
    """SIGKILL the pod's whole process group (its torchrun agent and workers)."""
    pod = next(p for p in ex.store.pods("default", NAME) if p.job == "node" and p.idx == idx)
    assert pod.pid
    pgid = os.getpgid(pod.pid)
    assert pgid != os.getpgid(0), "the pod must be its own process group"
    os.killpg(pgid, signal.SIGKILL)


def _losses(log: str, world: int) -> list[float]:
    return [float(m) for m in re.findall(rf"world size {world} loss ([\d.]+)", log)]


def _run_and_lose_a_node(ex: LocalExecutor) -> str:
    ex.submit(_job(steps=STEPS), cwd=str(ROOT / "examples"))
    _wait_for(ex, r"step \d+ world size 3 loss")
    _kill_node(ex, 2)
    log = _wait_for(ex, r"step \d+ world size 2 loss", timeout=120)
    assert re.search(r"rank \d: world size 2, from step [1-9]\d*", log), "resumed, not restarted"
    return log


def _completed_log(ex: LocalExecutor) -> str:
    state = ex.wait(NAME, "default", frozenset({"Complete", "Failed"}), timeout=240)
    log = Path(ex.log_path(NAME, "default", "node", 0)).read_text(errors="replace")
    assert state.phase == "Complete", (state.reason, state.message, log[-3000:])
    assert state.restarts == 0, "the JobSet was not restarted"
    steps = [int(s) for s in re.findall(r"^step (\d+) world size", log, re.M)]
    assert steps == list(range(1, STEPS + 1)), "no step repeated or lost"
    before, after = _losses(log, 3), _losses(log, 2)
    assert before and after and after[-1] < before[0], "the loss kept falling"
    events = [e for e in ex.events(NAME, "default") if e.reason == "NodeLost"]
    assert len(events) == 1 and "2 nodes left (minNodes 2, maxNodes 3)" in events[0].message
    return log


def test_a_lost_node_shrinks_the_job_and_it_completes(tmp_path: Path) -> None:
    ex = LocalExecutor(tmp_path / "home")
    _run_and_lose_a_node(ex)
    _completed_log(ex)


@pytest.mark.xfail(
    strict=False,
    reason="on this loaded 2-core machine the added node's agent has timed out in torch's c10d "
    "rendezvous (DistStoreError on the round's MASTER_ADDR or role_info keys, 60 s)",
)
def test_scale_brings_a_lost_node_back(tmp_path: Path) -> None:
    ex = LocalExecutor(tmp_path / "home")
    try:
        _run_and_lose_a_node(ex)
        ex.scale(NAME, "default", 3)  # what `trainjob scale torch-elastic --nodes 3` calls
        _wait_for(ex, r"world size 2 loss[\s\S]*step \d+ world size 3 loss", timeout=150)
        _completed_log(ex)
        joined = [e for e in ex.events(NAME, "default") if e.reason == "NodeJoined"]
        assert len(joined) == 1 and "scaled to 3 nodes" in joined[0].message
    finally:  # a failed try leaves the job running: nothing a test started outlives it
        if ex.exists(NAME, "default"):
            ex.delete(NAME, "default")


def test_scale_outside_the_bounds_is_refused(tmp_path: Path) -> None:
    ex = LocalExecutor(tmp_path / "home")
    ex.submit(_job(steps=400), cwd=str(ROOT / "examples"))
    with pytest.raises(
        InvalidError,
        match=r"spec.trainer.numNodes: Invalid value: 4: must be "
        r"between elasticPolicy.minNodes \(2\) and maxNodes \(3\)",
    ):
        ex.scale(NAME, "default", 4)
    ex.delete(NAME, "default")


def test_below_min_nodes_the_job_fails_saying_so(tmp_path: Path) -> None:
    ex = LocalExecutor(tmp_path / "home")
    ex.submit(_job(steps=400), cwd=str(ROOT / "examples"))
    _wait_for(ex, r"step \d+ world size 3 loss")
    _kill_node(ex, 2)
    _kill_node(ex, 1)
    state = ex.wait(NAME, "default", frozenset({"Complete", "Failed"}), timeout=120)
    assert state.phase == "Failed"
    assert state.reason == "FewerThanMinNodes"
    assert "fewer than minNodes (2) nodes left: 1" in state.message
