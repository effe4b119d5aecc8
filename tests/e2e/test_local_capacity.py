"""Many jobs at once on the local backend: they wait Queued for this machine's CPUs
(``trainjob.local.job.capacity``), start in submit order as the running ones end, never more at
once than the limit (``TRAINJOB_LOCAL_CPUS``, inherited by each job's supervisor from the
submitting process), and every one ends Complete. Each job's command records when it ran, so
how many ran at once is read from what ran, not from the store's second-resolution times."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tests.e2e import local_jobs as L

from trainjob.api import phases
from trainjob.cli import listing
from trainjob.executor import phases as activity
from trainjob.local import LocalExecutor

pytestmark = pytest.mark.e2e
TIMEOUT = 300.0

MARK = """
import json, os, time
start = time.time()
time.sleep({seconds})
with open({marks!r}, "a") as f:
    f.write(json.dumps({{"job": os.environ["JOB"], "start": start, "end": time.time()}}) + "\\n")
"""


def most_at_once(marks: list[dict[str, float]]) -> int:
    edges = sorted([(m["start"], 1) for m in marks] + [(m["end"], -1) for m in marks])
    now = most = 0
    for _, d in edges:
        now += d
        most = max(most, now)
    return most


def get_jobs(home: Path) -> str:
    return subprocess.run(
        [sys.executable, "-m", "trainjob", "get", "jobs"],
        env={**os.environ, "TRAINJOB_HOME": str(home)},
        capture_output=True, text=True, check=True, timeout=60,
    ).stdout  # fmt: skip


def test_twenty_at_once_on_two_cpus_wait_queued_and_all_complete(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TRAINJOB_LOCAL_CPUS", "2")
    marks = tmp_path / "marks.jsonl"
    ex = LocalExecutor(tmp_path / "home")
    code = MARK.format(seconds=1.5, marks=str(marks))
    names = [f"burst-{i:02d}" for i in range(20)]
    for name in names:
        ex.submit(L.trainjob(name, code, env={"JOB": name}), [L.runtime()], cwd=str(tmp_path))
    queued: dict[str, str] = {}
    listed_queued = False
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        states = ex.states()
        for s in states:
            doing, why = activity.activity(s)
            if doing == activity.QUEUED:
                queued[s.name] = why
                assert listing.status_cell(s)[0] == "Queued"
        if not listed_queued and len(queued) >= 5:
            rows = [line.split() for line in get_jobs(tmp_path / "home").splitlines()[1:]]
            listed_queued = any(r[1] == "Queued" for r in rows)
        if all(s.finished for s in states):
            break
        time.sleep(0.2)
    states = ex.states()
    assert {s.name: s.phase for s in states} == dict.fromkeys(names, "Complete")
    # the later ones waited, Queued for this machine's CPUs, and `trainjob get jobs` said so
    assert len(queued) >= 10, queued
    assert all(w.startswith(phases.REASON_WAITING_FOR_RESOURCES + ": ") for w in queued.values())
    assert "TRAINJOB_LOCAL_CPUS" in next(iter(queued.values()))
    assert listed_queued
    ran = [json.loads(line) for line in marks.read_text().splitlines()]
    assert sorted(m["job"] for m in ran) == names  # each ran once
    assert most_at_once(ran) <= 2, ran  # never beyond the limit
    # the submitted first started first (a slot freed goes to the oldest waiting job)
    # (with 2 at once, each job started before the one submitted two after it)
    order = [names.index(m["job"]) for m in sorted(ran, key=lambda m: m["start"])]
    assert all(order[i] < order[i + 2] for i in range(len(order) - 2)), order
    # the finished ones hold no share: the home's capacity folder is empty again
    assert not [p for p in (tmp_path / "home" / "capacity").iterdir() if p.name != ".lock"]
    # a job's conditions are upstream's once it finished: no Queued left behind
    for s in states:
        assert phases.current((s.trainjob.get("status") or {}).get("conditions")) is None


def _wait(what: str, until: object, timeout: float = TIMEOUT) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if until():  # type: ignore[operator]
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def test_a_queued_job_can_be_suspended_resumed_and_deleted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TRAINJOB_LOCAL_CPUS", "1")
    ex = LocalExecutor(tmp_path / "home")
    rt = [L.runtime()]
    ex.submit(L.trainjob("long", "import time; time.sleep(600)"), rt, cwd=str(tmp_path))
    _wait("long to run", lambda: ex.state("long").phase == "Running")
    for name in ("waits", "dropped"):
        ex.submit(L.trainjob(name, "print('ran')"), rt, cwd=str(tmp_path))

    def queued(name: str) -> bool:
        return activity.activity(ex.state(name))[0] == activity.QUEUED

    _wait("waits to be Queued", lambda: queued("waits") and queued("dropped"))
    assert ex.state("waits").phase == "Created"
    assert not any(p.phase != "Pending" for p in ex.state("waits").pods)
    ex.suspend("waits")  # a queued job leaves the queue while suspended
    assert ex.state("waits").phase == "Suspended"
    t = time.monotonic()
    ex.delete("dropped")  # its supervisor is waiting: it leaves at once
    assert time.monotonic() - t < 15 and not ex.exists("dropped")
    ex.resume("waits")
    _wait("waits to be Queued again", lambda: queued("waits"))
    ex.delete("long")  # its CPU is free: the queued job runs
    _wait("waits to finish", lambda: ex.state("waits").finished)
    assert ex.state("waits").phase == "Complete"
    assert list(ex.logs("waits")) == ["ran"]
