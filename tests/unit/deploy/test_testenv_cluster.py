"""``hack/testenv up --cluster`` (hack/testenv_cluster.py) starting a component whose port was
taken by another process between the pick and the bind, with a small Python server for the
component (no Go binary, no apiserver):

* taken before the component is ready: it is started again on other ports;
* taken after it is ready, while the KWOK nodes come up (a server it binds after its health
  endpoint answers): started again on other ports too, not a failed ``up``;
* taken at every start: ``up`` fails after PORT_ATTEMPTS starts, saying so, with the log.

hack/testenv and hack/testenv_cluster.py are scripts, loaded here as modules.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import socket
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[3]

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")

# The component: serves its health port, then (once the test says so, by the file argv[3]) binds
# its server port, exiting with Go's message when that one is taken, as kwok or jobset would.
COMPONENT = """
import os, socket, sys, time
health, server, go = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
h = socket.create_server(("127.0.0.1", health))
print(f"serving health on {health}", flush=True)
while not os.path.exists(go):
    time.sleep(0.05)
try:
    s = socket.create_server(("127.0.0.1", server))
except OSError:
    print(f"listen tcp 127.0.0.1:{server}: bind: address already in use", flush=True)
    sys.exit(1)
print(f"serving on {server}", flush=True)
time.sleep(120)
"""


def load(name: str, path: Path) -> ModuleType:
    loader = importlib.machinery.SourceFileLoader(name, str(path))
    spec = importlib.util.spec_from_loader(name, loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


testenv = load("hack_testenv_for_cluster", REPO / "hack" / "testenv")
cluster_module = testenv.cluster_module()


@pytest.fixture
def taken() -> Iterator[int]:
    """A port another process listens on."""
    with socket.create_server(("127.0.0.1", 0)) as s:
        yield int(s.getsockname()[1])


@pytest.fixture
def cluster(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    (tmp_path / "logs").mkdir()
    bins = tmp_path / "bin"
    for comp, binary in cluster_module.BINARIES.values():
        (bins / comp).mkdir(parents=True, exist_ok=True)
        (bins / comp / binary).touch()
    monkeypatch.setattr(testenv, "component_dir", lambda comp: bins / comp)
    monkeypatch.setattr(testenv, "Api", lambda *a: None)
    env: dict[str, Any] = {"server": "", "token": "", "ca_file": "", "pids": {}, "starts": {}}
    env["argv"] = {}
    args = SimpleNamespace(kueue=False, coscheduling=False, timeout=60.0)
    c = cluster_module.Cluster(testenv, tmp_path, env, args)
    yield c
    for name, pid in env["pids"].items():
        testenv.stop(pid, env["starts"][name], name, timeout=5)


def component(c: Any, go: Path, ready_on: str = "health") -> Any:
    """The component "fake": health port first, then its server port (both picked on start);
    ready once ``ready_on`` serves."""

    def argv() -> list[str]:
        health, server = c.port("fake", "health"), c.port("fake", "server")
        return [sys.executable, "-c", COMPONENT, str(health), str(server), str(go)]

    def ready() -> bool:  # (as http_ok on its health endpoint)
        return serving(c, ready_on)

    return cluster_module.Component("fake", argv, lambda: "127.0.0.1", ready)


def picks(monkeypatch: pytest.MonkeyPatch, taken: int, which: Callable[[int], bool]) -> list[int]:
    """Make the n-th port picked (from 0) the ``taken`` one where ``which(n)``."""
    handed: list[int] = []
    real = testenv.free_port

    def free_port(avoid: set[int] | frozenset[int] = frozenset()) -> int:
        handed.append(taken if which(len(handed)) else real({*avoid, taken}))
        return handed[-1]

    monkeypatch.setattr(testenv, "free_port", free_port)
    return handed


def serving(c: Any, what: str = "server") -> bool:
    """Whether the latest start of "fake" serves its port ``what`` (health, server)."""
    text = testenv.log_text(c.state, "fake", c.offsets["fake"])
    port = c.ports["fake"][what]
    return (f"serving health on {port}" if what == "health" else f"serving on {port}") in text


def test_a_port_taken_before_the_component_is_ready_is_replaced(
    cluster: Any, tmp_path: Path, taken: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    go = tmp_path / "go"
    go.touch()
    handed = picks(monkeypatch, taken, lambda n: n == 1)  # the first start's server port
    fake = component(cluster, go, ready_on="server")
    cluster.start(fake)
    cluster.wait(fake)
    assert cluster.attempts["fake"] == 2
    assert cluster.ports["fake"]["server"] == handed[3] != taken
    assert cluster.env["ports"]["fake/server"] == handed[3]


def test_a_port_taken_after_the_component_is_ready_is_replaced_while_nodes_come_up(
    cluster: Any, tmp_path: Path, taken: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    go = tmp_path / "go"  # the component binds its server port only once the nodes are waited on
    handed = picks(monkeypatch, taken, lambda n: n == 1)
    fake = component(cluster, go)
    cluster.start(fake)
    cluster.wait(fake)  # ready: its health port answers
    assert cluster.attempts["fake"] == 1

    def nodes_ready(names: list[str]) -> bool:
        go.touch()
        return cluster.attempts["fake"] == 2 and serving(cluster)

    monkeypatch.setattr(cluster, "nodes_ready", nodes_ready)
    cluster.wait_nodes([fake], ["kwok-cpu-0"])
    assert cluster.ports["fake"]["server"] == handed[3] != taken
    assert testenv.pid_alive(cluster.env["pids"]["fake"], cluster.env["starts"]["fake"])
    log = (tmp_path / "logs" / "fake.log").read_text()
    assert f"listen tcp 127.0.0.1:{taken}: bind: address already in use" in log


def test_a_port_taken_at_every_start_fails_up_with_the_log(
    cluster: Any,
    tmp_path: Path,
    taken: int,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    go = tmp_path / "go"
    go.touch()
    picks(monkeypatch, taken, lambda n: n % 2 == 1)  # every start's server port
    fake = component(cluster, go)
    monkeypatch.setattr(cluster, "nodes_ready", lambda names: False)
    cluster.start(fake)
    with pytest.raises(SystemExit):
        cluster.wait(fake)
        cluster.wait_nodes([fake], ["kwok-cpu-0"])
    assert cluster.attempts["fake"] == testenv.PORT_ATTEMPTS
    err = capsys.readouterr().err
    assert f"a port was taken (127.0.0.1:{taken}: address already in use)" in err
    assert f"at each of {testenv.PORT_ATTEMPTS} starts" in err
    assert f"listen tcp 127.0.0.1:{taken}: bind: address already in use" in err
