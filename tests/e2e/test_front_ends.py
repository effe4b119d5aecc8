"""One job, two front ends: the CLI and the SDK read and change it the same way on the local backend.

Both sit on the one executor interface (``trainjob.executor``). Each test runs a real job that
fails once and is restarted by its JobSet failure policy, then asks the front end for its status,
its events, its log followed from the start (across the restart), its status changes as they
come (``get jobs -w``; ``wait_for_job_status`` callbacks), and deletes it. The same cluster-side
test, where the test plays JobSet and kubelet, is tests/integration/test_front_ends_cluster.py.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.e2e import local_jobs as L
from tests.e2e.cli import local_env
from tests.front_ends import Cli, FrontEnd, Sdk

from trainjob import TrainerClient
from trainjob.client.config import LocalProcessBackendConfig
from trainjob.local import LocalExecutor

pytestmark = pytest.mark.e2e

# Fails its first attempt (after a line, once the test says the follower has it), passes its
# second: the JobSet restarts it once.
CODE = """
import os, pathlib, sys, time
print("attempt", os.environ["ATTEMPT"], flush=True)
if os.environ["ATTEMPT"] == "0":
    release = pathlib.Path(os.environ["RELEASE"])
    deadline = time.monotonic() + 60
    while not release.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    sys.exit(1)
"""


@pytest.fixture(params=["cli", "sdk"])
def front(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[tuple[FrontEnd, LocalExecutor]]:
    home = tmp_path / "home"
    ex = LocalExecutor(home)
    ex.apply_runtime(L.runtime("retry", failure_policy={"maxRestarts": 1}))
    if request.param == "cli":
        fe: FrontEnd = Cli(local_env(home))
    else:
        fe = Sdk(TrainerClient(LocalProcessBackendConfig(home=home)))
    yield fe, ex
    for s in ex.states(None, pods=False):
        ex.delete(s.name, s.namespace)


def test_follow_goes_across_the_restart_and_the_job_ends_complete(
    front: tuple[FrontEnd, LocalExecutor], tmp_path: Path
) -> None:
    fe, ex = front
    release = tmp_path / "release"
    ex.submit(L.trainjob("flaky", CODE, runtime="retry", env={"RELEASE": str(release)}))
    lines = fe.follow("flaky", release.touch)
    assert lines == ["attempt 0", "attempt 1"]  # one pod, two attempts
    ex.wait("flaky", timeout=90)
    assert fe.status("flaky") == "Complete"
    assert ex.state("flaky").restarts == 1
    reasons = fe.reasons("flaky")
    assert reasons[-1] == "AllJobsCompleted" and "Restarting" in reasons, reasons


def test_watch_sees_each_change_once_and_delete_removes_the_job(
    front: tuple[FrontEnd, LocalExecutor], tmp_path: Path
) -> None:
    fe, ex = front
    release = tmp_path / "release"
    ex.submit(L.trainjob("watched", CODE, runtime="retry", env={"RELEASE": str(release)}))
    seen = fe.watch("watched", release.touch)
    assert seen[-1].startswith("Complete") and len(seen) >= 2, seen
    assert all(a != b for a, b in itertools.pairwise(seen)), seen
    assert fe.exists("watched")
    fe.delete("watched")
    assert not fe.exists("watched")
    assert ex.states(None) == []
