"""hack/testenv itself, with the real etcd and kube-apiserver, in state dirs of its own (beside
the session's control plane, which provides the built binaries):

* a port taken between picking and binding makes ``up`` pick another one, not fail;
* ``up`` on the state dir of a crashed session (processes SIGKILLed, env.json left behind) stops
  nothing that is not ours and starts afresh;
* two ``up`` at once on one state dir give one control plane (the second finds it running);
* ``restart-apiserver`` brings the apiserver back on the same port with the data kept.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import json
import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

import pytest

from trainjob.kube import Client
from trainjob.kube import resources as r

if TYPE_CHECKING:
    from tests.integration.conftest import ControlPlane

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[2]
TESTENV = REPO / "hack" / "testenv"


def load_testenv() -> ModuleType:
    loader = importlib.machinery.SourceFileLoader("hack_testenv_it", str(TESTENV))
    spec = importlib.util.spec_from_loader("hack_testenv_it", loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def run_testenv(state: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    return subprocess.run(
        [str(TESTENV), *args, "--state-dir", str(state)],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=300,
    )


@pytest.fixture
def state(control_plane: ControlPlane, tmp_path: Path) -> Iterator[Path]:
    d = tmp_path / "cp"
    yield d
    run_testenv(d, "down")


def up_args(state: Path) -> list[str]:
    return ["--no-build", "--no-repo-crds", "--kubeconfig", str(state.parent / "kubeconfig")]


def namespace_exists(kubeconfig: Path, name: str) -> bool:
    with Client.from_config(str(kubeconfig)) as kube:
        return kube.get_or_none(r.NAMESPACES, name) is not None


def test_a_taken_port_is_replaced_and_a_crashed_state_dir_is_started_afresh(
    state: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    mod = load_testenv()
    taken = socket.create_server(("127.0.0.1", 0))
    taken_port = int(taken.getsockname()[1])
    real_free_port = mod.free_port
    handed: list[int] = []

    def free_port(avoid: frozenset[int] = frozenset()) -> int:
        # The first port handed out (etcd's client port) is one somebody else listens on.
        port = taken_port if not handed else real_free_port(avoid)
        handed.append(port)
        return port

    monkeypatch.setattr(mod, "free_port", free_port)
    try:
        assert mod.main(["up", "--state-dir", str(state), *up_args(state)]) == 0
    finally:
        taken.close()
    out = capsys.readouterr().out
    assert f"127.0.0.1:{taken_port}: address already in use; trying other ports" in out
    env = json.loads((state / "env.json").read_text())
    assert env["etcd_url"] != f"http://127.0.0.1:{taken_port}"
    kubeconfig = state.parent / "kubeconfig"
    with Client.from_config(str(kubeconfig)) as kube:
        kube.create(
            r.NAMESPACES,
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "before-the-crash"}},
        )

    # The session dies without `down`: both processes killed, env.json and pid files stay.
    for comp in ("kube-apiserver", "etcd"):
        os.kill(env["pids"][comp], signal.SIGKILL)
        mod._children[env["pids"][comp]].wait(10)
    bystander = subprocess.Popen(["sleep", "600"])  # outlives a loaded `up`; killed below
    try:
        # A pid file of an older format now names a process that is not ours.
        (state / "etcd.pid").write_text(f"{bystander.pid}\n")
        again = run_testenv(state, "up", *up_args(state))
        assert again.returncode == 0, again.stderr
        assert "stale state in" in again.stdout
        assert bystander.poll() is None, "a process that is not ours was signalled"
    finally:
        bystander.kill()
        bystander.wait()
    assert run_testenv(state, "status").returncode == 0
    assert not namespace_exists(kubeconfig, "before-the-crash"), "a fresh etcd"


def test_two_ups_at_once_make_one_control_plane_and_the_apiserver_restarts_with_its_data(
    state: Path,
) -> None:
    args = [str(TESTENV), "up", "--state-dir", str(state), *up_args(state)]
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    procs = [
        subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
        for _ in range(2)
    ]
    outs = [p.communicate(timeout=300)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    assert sum("already running" in o for o in outs) == 1, outs
    assert sum("starting etcd" in o for o in outs) == 1, outs

    kubeconfig = state.parent / "kubeconfig"
    with Client.from_config(str(kubeconfig)) as kube:
        kube.create(
            r.NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "kept"}}
        )
    before = json.loads((state / "env.json").read_text())
    started = time.monotonic()
    restart = run_testenv(state, "restart-apiserver", "--down-for", "1", "--kill")
    assert restart.returncode == 0, restart.stderr
    assert time.monotonic() - started >= 1.0
    after = json.loads((state / "env.json").read_text())
    assert after["server"] == before["server"]
    assert after["pids"]["kube-apiserver"] != before["pids"]["kube-apiserver"]
    assert after["pids"]["etcd"] == before["pids"]["etcd"]
    assert run_testenv(state, "status").returncode == 0
    assert namespace_exists(kubeconfig, "kept")


def test_restart_apiserver_without_a_control_plane_is_an_error(tmp_path: Path) -> None:
    res = run_testenv(tmp_path / "nothing", "restart-apiserver")
    assert res.returncode == 1
    assert res.stderr.startswith("testenv: error: not running (no state in ")
