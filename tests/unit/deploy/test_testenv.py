"""hack/testenv's process bookkeeping, without etcd or kube-apiserver (plain ``sleep`` processes).

* a process is "alive" from the moment ``start`` returns: its start time (``/proc/<pid>/stat``),
  not its ``cmdline``, identifies it (right after ``Popen`` the cmdline can read empty while the
  child is still inside ``execve``: that was the "etcd exited" flake with an empty log);
* a pid whose start time differs (a recycled pid) is not ours and is never signalled, and a pid
  file written by an older hack/testenv (no start time) is trusted only while the pid runs the
  binary env.json names;
* an exited child's status is told (code or signal);
* ``up``/``down``/``restart-apiserver`` on one state dir hold a lock, so they run one at a time.

hack/testenv is a script, loaded here as a module.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import json
import os
import signal
import subprocess
import threading
import time
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[3]


def load_testenv() -> ModuleType:
    path = REPO / "hack" / "testenv"
    loader = importlib.machinery.SourceFileLoader("hack_testenv", str(path))
    spec = importlib.util.spec_from_loader("hack_testenv", loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


testenv = load_testenv()
pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")


@pytest.fixture
def state(tmp_path: Path) -> Path:
    (tmp_path / "logs").mkdir()
    return tmp_path


def kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        return
    p = testenv._children.get(pid)
    if p is not None:
        p.wait(5)


def test_a_process_is_alive_as_soon_as_start_returns(state: Path) -> None:
    dead = []
    for _ in range(50):
        pid, started = testenv.start("sleeper", ["sleep", "30"], state)
        try:
            if not testenv.pid_alive(pid, started):
                dead.append(pid)
        finally:
            kill(pid)
    assert dead == []
    assert started is not None and started.isdigit()
    assert (state / "sleeper.pid").read_text().split() == [str(pid), started]


def test_what_a_process_cmdline_says_does_not_matter(state: Path) -> None:
    # A child still inside execve shows an empty cmdline: play that state for as long as needed.
    pid, started = testenv.start("sleeper", ["bash", "-c", 'exec -a "" sleep 30'], state)
    try:
        deadline = time.monotonic() + 10
        while Path(f"/proc/{pid}/cmdline").read_bytes()[:1] != b"\0":
            assert time.monotonic() < deadline, "exec -a did not take effect"
            time.sleep(0.01)
        assert testenv.pid_alive(pid, started)
        assert testenv.healthy({"pids": {"etcd": pid}, "starts": {"etcd": started}})[1] != (
            f"etcd (pid {pid}) is not running"
        )
    finally:
        kill(pid)


def test_a_recycled_pid_is_not_ours_and_is_not_signalled(state: Path) -> None:
    other = subprocess.Popen(["sleep", "30"])
    try:
        real = testenv.proc_start(other.pid)
        assert testenv.pid_alive(other.pid, real)
        assert not testenv.pid_alive(other.pid, str(int(real) + 1))
        testenv.stop(other.pid, str(int(real) + 1), "etcd", timeout=1)
        assert other.poll() is None, "a process with another start time was signalled"
    finally:
        other.kill()
        other.wait()
    assert not testenv.pid_alive(other.pid, real)


def test_an_old_pid_file_is_trusted_only_while_its_pid_runs_the_named_binary(
    state: Path,
) -> None:
    other = subprocess.Popen(["sleep", "30"])
    try:
        deadline = time.monotonic() + 10  # until its execve is through (cmdline reads "sleep")
        while not Path(f"/proc/{other.pid}/cmdline").read_bytes().startswith(b"sleep\0"):
            assert time.monotonic() < deadline
            time.sleep(0.01)
        (state / "etcd.pid").write_text(f"{other.pid}\n")  # older format: pid only
        env = {"binaries": {"etcd": "/no/such/etcd"}}
        assert testenv.recorded_processes(state, env) == {}
        assert testenv.recorded_processes(state, None) == {}
        env = {"binaries": {"etcd": "sleep"}}
        assert testenv.recorded_processes(state, env) == {
            "etcd": (other.pid, testenv.proc_start(other.pid))
        }
    finally:
        other.kill()
        other.wait()


def test_env_json_pids_and_start_times_win_over_pid_files(state: Path) -> None:
    (state / "etcd.pid").write_text("1 1\n")
    env = {"pids": {"etcd": 4242}, "starts": {"etcd": "99"}}
    assert testenv.recorded_processes(state, env) == {"etcd": (4242, "99")}


@pytest.mark.parametrize(
    ("argv", "want"),
    [
        (["sh", "-c", "exit 3"], "exited with code 3"),
        (["sh", "-c", "kill -KILL $$"], "was killed by SIGKILL"),
    ],
    ids=["an exit code", "a signal"],
)
def test_an_exited_child_says_how_it_ended(state: Path, argv: list[str], want: str) -> None:
    pid, started = testenv.start("short", argv, state)
    deadline = time.monotonic() + 10
    while testenv.pid_alive(pid, started) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not testenv.pid_alive(pid, started)
    assert testenv.exit_status(pid) == want


def test_log_tail_reads_only_what_this_start_wrote(state: Path) -> None:
    (state / "logs" / "etcd.log").write_text("old run\n")
    offset = testenv.log_size(state, "etcd")
    assert testenv.log_tail(state, "etcd", offset=offset) == "(empty)"
    with open(state / "logs" / "etcd.log", "a") as f:
        f.write("bind: address already in use\n")
    assert testenv.log_tail(state, "etcd", offset=offset) == "bind: address already in use"


def test_commands_on_one_state_dir_take_turns(tmp_path: Path) -> None:
    state = tmp_path / "cp"
    order: list[str] = []
    inside = threading.Event()

    def first() -> None:
        with testenv.state_lock(state):
            inside.set()
            time.sleep(0.5)
            order.append("first done")

    t = threading.Thread(target=first)
    t.start()
    assert inside.wait(5)
    with testenv.state_lock(state):
        order.append("second in")
    t.join()
    assert order == ["first done", "second in"]
    assert (tmp_path / "cp.lock").exists()


def test_status_of_a_state_dir_without_processes_is_not_running(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    state = tmp_path / "cp"
    state.mkdir()
    (state / ".trainjob-testenv").write_text("")
    (state / "env.json").write_text(
        json.dumps(
            {
                "server": "https://127.0.0.1:1",
                "etcd_url": "http://127.0.0.1:1",
                "token": "t",
                "ca_file": "/dev/null",
                "kubeconfig": str(state / "kubeconfig"),
                "state_dir": str(state),
                "pids": {"etcd": 2**22 + 1, "kube-apiserver": 2**22 + 2},
                "starts": {"etcd": "1", "kube-apiserver": "1"},
            }
        )
    )
    assert testenv.main(["status", "--state-dir", str(state)]) == 1
    assert "NOT healthy: etcd (pid 4194305) is not running" in capsys.readouterr().out
