"""Local file safety, secrets and honest messages (issue 11, classes 7, 8 and 10), with real jobs.

* A home made by hand with 0755 is tightened: the home and every directory 0700, the store, logs
  and the supervisor's log 0600.
* A symbolic link planted in the home is refused, never followed: submitting a job through
  ``jobs/default -> elsewhere`` removes nothing there; deleting one leaves the link's target alone.
* A CustomTrainer's ``func_args`` never appear in the process table, and nothing of the job is
  left in the system's temp directory after it is deleted.
* A container killed by a signal is reported by the signal, not by its last printed line; terminal
  escapes from a log never reach the status or ``describe``; the pods of a dead supervisor are
  not Ready.
"""

from __future__ import annotations

import os
import signal
import stat
import time
from pathlib import Path

import pytest
from tests.e2e import local_jobs as L
from tests.redteam.cases import cli, environment

from trainjob import CustomTrainer, TrainerClient
from trainjob.client.config import LocalProcessBackendConfig
from trainjob.errors import ConfigError
from trainjob.local import LocalExecutor
from trainjob.local.state import procs

pytestmark = pytest.mark.e2e
TIMEOUT = 90.0
SECRET = "s3cr3t-token-4f9a2"


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def test_a_loose_home_is_tightened_on_open(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir(mode=0o755)
    os.chmod(home, 0o755)
    ex = LocalExecutor(home)
    ex.apply_runtime(L.runtime())
    ex.submit(L.trainjob("tight", "print('done')"), cwd=str(tmp_path))
    ex.wait("tight", timeout=TIMEOUT)
    assert _mode(home) == 0o700 and _mode(home / "trainjob.db") == 0o600
    for path in sorted((home / "jobs").rglob("*")):
        assert _mode(path) == (0o700 if path.is_dir() else 0o600), path
    ex.delete("tight")


def test_a_link_planted_in_the_home_is_refused_and_its_target_kept(tmp_path: Path) -> None:
    home = tmp_path / "home"
    victim = tmp_path / "victim"
    (victim / "planted").mkdir(parents=True)
    (victim / "planted" / "precious.txt").write_text("keep me")
    ex = LocalExecutor(home)
    ex.apply_runtime(L.runtime())
    (home / "jobs").mkdir()
    (home / "jobs" / "default").symlink_to(victim)
    with pytest.raises(ConfigError) as err:
        ex.submit(L.trainjob("planted", "print('done')"), cwd=str(tmp_path))
    assert str(err.value) == (
        f"refusing to use {home / 'jobs' / 'default'}: it is a symbolic link, and trainjob never "
        f"follows links inside TRAINJOB_HOME ({home}); remove the link "
        f"(rm {home / 'jobs' / 'default'})"
    )
    assert (victim / "planted" / "precious.txt").read_text() == "keep me"
    assert ex.states(None) == []


def test_delete_never_removes_through_a_link(tmp_path: Path) -> None:
    home = tmp_path / "home"
    ex = LocalExecutor(home)
    ex.apply_runtime(L.runtime())
    ex.submit(L.trainjob("linked", "print('done')"), cwd=str(tmp_path))
    ex.wait("linked", timeout=TIMEOUT)
    victim = tmp_path / "victim"
    (victim / "linked").mkdir(parents=True)
    (victim / "linked" / "precious.txt").write_text("keep me")
    jobs = home / "jobs" / "default"
    jobs.rename(home / "jobs" / "moved")
    jobs.symlink_to(victim)
    ex.delete("linked")
    assert (victim / "linked" / "precious.txt").read_text() == "keep me"
    assert ex.states(None) == []


def test_a_store_file_that_is_a_link_is_refused(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    elsewhere = tmp_path / "elsewhere.db"
    (home / "trainjob.db").symlink_to(elsewhere)
    res = cli(["get", "jobs"], home)
    assert (res.code, res.err) == (
        1,
        f"error: refusing to use {home / 'trainjob.db'}: it is a symbolic link (trainjob never "
        "follows links inside its home); remove it\n",
    )
    assert not elsewhere.exists()


def train_with_a_token(token: str) -> None:
    import time

    time.sleep(10)  # Running long enough for the test's poll (a /proc scan each) to see it
    print("trained with a token of", len(token), "characters")


def _cmdlines() -> list[str]:
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                out.append(Path(f"/proc/{entry}/cmdline").read_bytes().decode(errors="replace"))
            except OSError:
                continue
    return out


def test_func_args_stay_out_of_the_process_table_and_the_temp_dir(tmp_path: Path) -> None:
    system_tmp = tmp_path / "system-tmp"
    system_tmp.mkdir()
    with environment(TMPDIR=str(system_tmp)):
        client = TrainerClient(LocalProcessBackendConfig(home=tmp_path / "home", cwd=str(tmp_path)))
        name = client.train(
            runtime="torch-distributed",
            trainer=CustomTrainer(func=train_with_a_token, func_args={"token": SECRET}),
        )
        deadline = time.monotonic() + TIMEOUT
        seen_running = False
        while time.monotonic() < deadline:
            assert not [c for c in _cmdlines() if SECRET in c], "func_args in the process table"
            job = client.get_job(name)
            seen_running = seen_running or job.status == "Running"
            if job.status in ("Complete", "Failed"):
                break
            time.sleep(0.2)
        assert job.status == "Complete" and seen_running
        assert "trained with a token of 18 characters" in "\n".join(client.get_job_logs(name))
        client.delete_job(name)
    assert list(system_tmp.iterdir()) == []


KILLED = "import os, signal; print('\\x1b[32mstep 10 loss 0.25\\x1b[0m', flush=True); os.kill(os.getpid(), signal.SIGKILL)"
COLOURED = "import sys; print('\\x1b[31mValueError: boom\\x1b[0m\\x07', flush=True); sys.exit(1)"


@pytest.mark.parametrize(
    ("code", "message"),
    [
        pytest.param(
            KILLED,
            'container "node" failed: exit code 137 (killed by SIGKILL)',
            id="SIGKILL is the reason, not the last line",
        ),
        pytest.param(
            COLOURED,
            'container "node" failed: exit code 1; its log says: ValueError: boom\\x07',
            id="colours dropped, control characters escaped",
        ),
    ],
)
def test_a_failed_pod_says_why_in_plain_text(code: str, message: str, tmp_path: Path) -> None:
    home = tmp_path / "home"
    ex = LocalExecutor(home)
    ex.apply_runtime(L.runtime())
    ex.submit(L.trainjob("why", code), cwd=str(tmp_path))
    state = ex.wait("why", phases={"Failed"}, timeout=TIMEOUT)
    (pod,) = state.pods
    assert (pod.message, pod.ready) == (message, False)
    described = cli(["describe", "job", "why"], home)
    assert described.code == 0 and "\x1b" not in described.out and "\x07" not in described.out
    assert message in described.out
    ex.delete("why")


def test_the_pods_of_a_dead_supervisor_are_not_ready(tmp_path: Path) -> None:
    ex = LocalExecutor(tmp_path / "home")
    ex.apply_runtime(L.runtime())
    ex.submit(L.trainjob("orphaned", "import time; time.sleep(600)", nodes=2), cwd=str(tmp_path))
    deadline = time.monotonic() + TIMEOUT
    while not (pods := ex.state("orphaned").pods) or not all(p.ready for p in pods):
        assert time.monotonic() < deadline, "the pods never became Ready"
        time.sleep(0.1)
    row = ex.store.job("default", "orphaned")
    assert row is not None and row.supervisor_pid
    os.kill(row.supervisor_pid, signal.SIGKILL)
    assert procs.wait_gone(row.supervisor_pid, row.supervisor_start, timeout=60)
    state = ex.state("orphaned")  # a reader notices the dead supervisor
    assert (state.phase, state.reason) == ("Failed", "SupervisorDied")
    assert [(p.phase, p.ready) for p in state.pods] == [("Failed", False)] * 2
    ex.delete("orphaned")
