"""This machine's capacity shared by the jobs of one home (``trainjob.local.job.capacity``): what a
job needs (its pods' CPU and memory requests, one CPU for a pod naming none), what the home may
use (the machine, or ``TRAINJOB_LOCAL_CPUS``/``TRAINJOB_LOCAL_MEMORY``), and the shares: the
submitted first start first, a job runs while it fits, a job larger than the machine runs alone,
and the share of a process that died is taken back. Real files and locks; another process holds
a share where a test needs one that dies."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from trainjob.local.job import capacity
from trainjob.local.job.capacity import Limit, Need, Share
from trainjob.runtime.plan import Plan


def plan(*jobs: tuple[int, int, list[dict[str, Any]]]) -> Plan:
    """A Plan whose JobSet has one replicatedJob per (replicas, parallelism, containers)."""
    rjobs = [
        {
            "name": f"job{i}",
            "replicas": replicas,
            "template": {"spec": {"parallelism": par, "template": {"spec": {"containers": ctrs}}}},
        }
        for i, (replicas, par, ctrs) in enumerate(jobs)
    ]
    return Plan(
        (
            {
                "apiVersion": "jobset.x-k8s.io/v1alpha2",
                "kind": "JobSet",
                "spec": {"replicatedJobs": rjobs},
            },
        )
    )


def ctr(**resources: dict[str, str]) -> dict[str, Any]:
    return {"name": "c", "resources": resources}


@pytest.mark.parametrize(
    ("the_plan", "need"),
    [
        pytest.param(plan((1, 1, [ctr()])), Need(1000, 0), id="a pod naming no CPU counts as one"),
        pytest.param(
            plan((1, 3, [ctr(requests={"cpu": "500m", "memory": "1Gi"})])),
            Need(1500, 3 << 30),
            id="every pod of a replicatedJob: parallelism times its requests",
        ),
        pytest.param(
            plan((2, 1, [ctr(limits={"cpu": "2", "memory": "100Mi"})])),
            Need(4000, 200 << 20),
            id="a limit stands for a request, replicas count",
        ),
        pytest.param(
            plan((1, 1, [ctr(requests={"cpu": "250m"}), ctr()])),
            Need(250, 0),
            id="a pod's containers add up; one naming none adds nothing beside one that does",
        ),
        pytest.param(
            plan((1, 1, [ctr()]), (1, 2, [ctr(requests={"cpu": "1"})])),
            Need(3000, 0),
            id="initializers count with the trainer",
        ),
    ],
)
def test_a_job_needs_what_its_pods_request(the_plan: Plan, need: Need) -> None:
    assert capacity.need(the_plan) == need


def test_the_home_may_use_the_machine_or_what_the_settings_say() -> None:
    machine = capacity.limit({})
    assert machine.millicpus == capacity.machine_millicpus() >= 1000
    assert machine.memory == capacity.machine_memory() > 0 and machine.problems == ()
    assert capacity.limit({"TRAINJOB_LOCAL_CPUS": "3", "TRAINJOB_LOCAL_MEMORY": "2Gi"}) == Limit(
        3000, 2 << 30
    )
    assert capacity.limit({"TRAINJOB_LOCAL_CPUS": "1500m"}).millicpus == 1500


@pytest.mark.parametrize("raw", ["0", "-1", "two", "1x"])
def test_a_bad_setting_keeps_the_machines_figure_and_says_so(raw: str) -> None:
    bad = capacity.limit({"TRAINJOB_LOCAL_CPUS": raw, "TRAINJOB_LOCAL_MEMORY": raw})
    assert (bad.millicpus, bad.memory) == (capacity.machine_millicpus(), capacity.machine_memory())
    assert bad.problems[0].startswith(f"TRAINJOB_LOCAL_CPUS={raw!r} is not a number of CPUs")
    assert bad.problems[1].startswith(f"TRAINJOB_LOCAL_MEMORY={raw!r} is not an amount of memory")


@pytest.fixture(autouse=True)
def no_recheck_wait(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(capacity, "RECHECK", 0.0)


TWO = Limit(2000, 64 << 30)


def share(home: Path, n: int, cpus: int = 1000, bound: Limit = TWO, memory: int = 0) -> Share:
    return Share(home, 1000.0 + n, f"uid-{n}", Need(cpus, memory), bound)


def test_jobs_run_while_they_fit_and_the_first_submitted_go_first(tmp_path: Path) -> None:
    a, b, c, d = (share(tmp_path, n) for n in range(4))
    assert a.take() is None and b.take() is None  # 2 of 2 CPUs
    assert c.take() is not None
    why = d.take()
    assert why is not None and "needs 1 CPU(s)" in why and "TRAINJOB_LOCAL_CPUS" in why
    a.release()
    assert d.take() is not None  # c was submitted before d and waits: c goes first
    assert c.take() is None and d.take() is not None
    b.release()
    assert d.take() is None
    assert sorted(p.name[:2] for p in (tmp_path / "capacity").iterdir() if p.name != ".lock") == [
        "r_", "r_",
    ]  # fmt: skip


def test_a_job_larger_than_the_machine_runs_alone(tmp_path: Path) -> None:
    small, big, after = share(tmp_path, 0), share(tmp_path, 1, cpus=8000), share(tmp_path, 2)
    assert small.take() is None
    assert big.take() is not None  # waits for the machine to be free
    assert after.take() is not None  # and nothing passes it
    small.release()
    assert big.take() is None and after.take() is not None
    big.release()
    assert after.take() is None


def test_memory_requests_count_against_the_homes_memory(tmp_path: Path) -> None:
    bound = Limit(8000, 3 << 30)
    a = share(tmp_path, 0, bound=bound, memory=2 << 30)
    b = share(tmp_path, 1, bound=bound, memory=2 << 30)
    assert a.take() is None
    why = b.take()
    assert why is not None and "2.0 Gi of memory" in why and "3.0 Gi at once" in why
    a.release()
    assert b.take() is None


def test_a_suspended_job_gives_its_share_back_and_waits_again_on_resume(tmp_path: Path) -> None:
    a, b = share(tmp_path, 0, cpus=2000), share(tmp_path, 1, cpus=2000)
    assert a.take() is None and b.take() is not None
    a.release()  # suspended
    assert b.take() is None
    assert a.take() is not None  # resumed: b runs now; a waits behind nobody but b's CPUs
    b.release()
    assert a.take() is None


HOLD = """
import sys, time
from pathlib import Path
from trainjob.local.job.capacity import Limit, Need, Share
s = Share(Path(sys.argv[1]), 1000.0, "uid-held", Need(2000, 0), Limit(2000, 1 << 30))
assert s.take() is None
print("held", flush=True)
time.sleep(600)
"""


def test_the_share_of_a_process_that_died_is_taken_back(tmp_path: Path) -> None:
    holder = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(HOLD), str(tmp_path)],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        later = share(tmp_path, 5)
        assert later.take() is not None  # the other process holds both CPUs
        holder.kill()
        holder.wait(10)
        assert later.take() is None  # its share died with it
        assert not any("uid-held" in p.name for p in (tmp_path / "capacity").iterdir())
    finally:
        holder.kill()
        holder.wait(10)
