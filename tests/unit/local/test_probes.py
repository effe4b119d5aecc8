"""Container probes as the kubelet runs them: parsing, each action against a real local server or
command, and the thresholds that make a container ready, or have it killed."""

from __future__ import annotations

import http.server
import socket
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from trainjob.local.job import probes
from trainjob.local.job.probes import LIVENESS, READINESS, STARTUP, PodProbes, Probe


def _parse(ctr: dict[str, Any], ports: dict[int, int] | None = None) -> probes.ContainerProbes:
    mapping = ports or {}
    return probes.parse(
        {"name": "c", **ctr},
        port_of=lambda p: mapping.get(p, p),
        host_of=lambda h: "127.0.0.1" if not h or h.endswith(".sub") else h,
        argv_of=lambda cmd: [a.replace("/workspace", "/tmp/ws") for a in cmd],
    )


def test_kubelet_defaults_apply_and_ports_and_paths_are_mapped_as_the_pod_s() -> None:
    got = _parse(
        {
            "ports": [{"name": "ssh", "containerPort": 2222}],
            "readinessProbe": {"tcpSocket": {"port": "ssh"}},
            "livenessProbe": {
                "exec": {"command": ["cat", "/workspace/ok"]},
                "periodSeconds": 2,
                "failureThreshold": 1,
            },
            "startupProbe": {"httpGet": {"path": "/healthz", "port": 8080, "host": "a-0.sub"}},
        },
        ports={2222: 40001, 8080: 40002},
    )
    ready, live, start = got.of(READINESS), got.of(LIVENESS), got.of(STARTUP)
    assert ready == Probe(READINESS, "tcpSocket", port=40001)  # period 10, timeout 1, 1/3
    assert (ready.period, ready.timeout, ready.success_threshold, ready.failure_threshold) == (
        10.0, 1.0, 1, 3,
    )  # fmt: skip
    assert live is not None and live.argv == ("cat", "/tmp/ws/ok")
    assert (live.period, live.failure_threshold) == (2.0, 1)
    assert start is not None and (start.host, start.port, start.path, start.scheme) == (
        "127.0.0.1", 40002, "/healthz", "HTTP",
    )  # fmt: skip


def test_a_container_without_probes_has_none() -> None:
    assert _parse({"image": "x"}).probes == ()


@pytest.fixture
def http_server() -> Iterator[tuple[int, list[str]]]:
    """A real HTTP server: /ok answers 200, /moved 302, anything else 503 with a body."""
    seen: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append(f"{self.path} {self.headers.get('X-Probe')}")
            code = {"/ok": 200, "/moved": 302}.get(self.path, 503)
            body = b"" if code < 400 else b"warming up"
            self.send_response(code)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1], seen
    server.shutdown()
    server.server_close()


def test_http_get_succeeds_on_2xx_and_3xx_and_says_the_status_otherwise(
    http_server: tuple[int, list[str]],
) -> None:
    port, seen = http_server
    ok = Probe(READINESS, "httpGet", port=port, path="/ok", headers=(("X-Probe", "yes"),))
    assert probes.run(ok, {}, "/") == (True, "")
    assert probes.run(Probe(READINESS, "httpGet", port=port, path="/moved"), {}, "/")[0]
    assert probes.run(Probe(READINESS, "httpGet", port=port, path="/x"), {}, "/") == (
        False,
        "HTTP probe failed with statuscode: 503: warming up",
    )
    assert seen[0] == "/ok yes"


def test_tcp_succeeds_when_something_listens_and_says_connection_refused_when_not() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        assert probes.run(Probe(READINESS, "tcpSocket", port=port), {}, "/") == (True, "")
    with socket.socket() as s:  # bound, not listening: refused, and no other process can take it
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        ok, msg = probes.run(Probe(READINESS, "tcpSocket", port=port), {}, "/")
    assert not ok and msg == f"dial tcp 127.0.0.1:{port}: Connection refused"


def test_exec_runs_with_the_container_env_and_cwd_and_times_out(tmp_path: Path) -> None:
    (tmp_path / "flag").write_text("")
    code = "import os,sys; sys.exit(0 if os.path.exists('flag') and os.environ['X']=='1' else 1)"
    probe = Probe(LIVENESS, "exec", argv=(sys.executable, "-c", code))
    assert probes.run(probe, {"X": "1"}, str(tmp_path)) == (True, "")
    failing = Probe(LIVENESS, "exec", argv=(sys.executable, "-c", "print('not yet'); exit(3)"))
    assert probes.run(failing, {}, str(tmp_path)) == (False, "not yet")
    slow = Probe(LIVENESS, "exec", argv=(sys.executable, "-c", "import time; time.sleep(30)"))
    t0 = time.monotonic()
    assert probes.run(slow, {}, str(tmp_path)) == (False, "command timed out after 1s")
    assert time.monotonic() - t0 < 10
    missing = Probe(LIVENESS, "exec", argv=("no-such-probe-command",))
    ok, msg = probes.run(missing, {}, "/")
    assert not ok and msg.startswith('exec "no-such-probe-command": ')


# -- thresholds ------------------------------------------------------------------------------


class Flag:
    """A probe outcome the test flips: an exec probe of ``test -e FILE``."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def set(self, ok: bool) -> None:
        if ok:
            self.path.write_text("")
        else:
            self.path.unlink(missing_ok=True)


def _settle(pp: PodProbes, now: float) -> probes.Outcome:
    """Tick at ``now`` until the probes started then have finished; all that it found."""
    out = pp.tick(now)
    for _ in range(200):
        busy = [w for ws in pp.workers.values() for w in ws.values() if w.future is not None]
        if not busy:
            return out
        time.sleep(0.01)
        more = pp.tick(now)
        out.events += more.events
        out.kill += more.kill
    raise AssertionError("probes did not finish")


def _exec(kind: str, flag: Path, **kw: object) -> Probe:
    return Probe(kind, "exec", argv=("test", "-e", str(flag)), period=1.0, **kw)  # type: ignore[arg-type]


@pytest.fixture
def pool() -> Iterator[ThreadPoolExecutor]:
    with ThreadPoolExecutor(2) as p:
        yield p


def test_readiness_needs_success_threshold_successes_and_is_lost_after_failure_threshold(
    tmp_path: Path, pool: ThreadPoolExecutor
) -> None:
    flag = Flag(tmp_path / "ready")
    probe = _exec(READINESS, flag.path, success_threshold=2, failure_threshold=2)
    pp = PodProbes([probes.ContainerProbes("c", (probe,))], {"c": ({}, "/")}, pool, started=0.0)
    assert not pp.ready
    flag.set(True)
    _settle(pp, 0.0)
    assert not pp.ready  # 1 of 2 successes
    _settle(pp, 1.0)
    assert pp.ready
    flag.set(False)
    out = _settle(pp, 2.0)
    assert pp.ready and out.events == [
        ("Warning", "Unhealthy", "Readiness probe failed: command exited with code 1")
    ]
    out = _settle(pp, 3.0)
    assert not pp.ready and out.events == [] and out.kill == []  # readiness never kills


def test_probes_wait_for_initial_delay_and_period(tmp_path: Path, pool: ThreadPoolExecutor) -> None:
    flag = Flag(tmp_path / "ready")
    flag.set(True)
    probe = Probe(READINESS, "exec", argv=("test", "-e", str(flag.path)), initial_delay=5.0)
    pp = PodProbes([probes.ContainerProbes("c", (probe,))], {"c": ({}, "/")}, pool, started=0.0)
    _settle(pp, 4.9)
    assert not pp.ready
    _settle(pp, 5.0)
    assert pp.ready


def test_a_startup_probe_holds_back_readiness_then_liveness_kills_after_its_threshold(
    tmp_path: Path, pool: ThreadPoolExecutor
) -> None:
    started, alive = Flag(tmp_path / "started"), Flag(tmp_path / "alive")
    alive.set(True)
    checks = probes.ContainerProbes(
        "c", (_exec(STARTUP, started.path), _exec(LIVENESS, alive.path, failure_threshold=2))
    )
    pp = PodProbes([checks], {"c": ({}, "/")}, pool, started=0.0)
    _settle(pp, 0.0)
    assert not pp.ready and pp.workers["c"][LIVENESS].successes == 0  # not run yet
    started.set(True)
    _settle(pp, 1.0)
    assert pp.ready  # no readiness probe: ready once started
    alive.set(False)
    _settle(pp, 2.0)
    out = _settle(pp, 3.0)
    assert out.kill == [("c", "Container c failed liveness probe, will be restarted")]
    assert ("Normal", "Killing", "Container c failed liveness probe, will be restarted") in (
        out.events
    )
    assert not pp.ready


def test_a_startup_probe_that_never_succeeds_kills_the_container(
    tmp_path: Path, pool: ThreadPoolExecutor
) -> None:
    probe = _exec(STARTUP, tmp_path / "never", failure_threshold=3)
    pp = PodProbes([probes.ContainerProbes("c", (probe,))], {"c": ({}, "/")}, pool, started=0.0)
    kills = [k for t in (0.0, 1.0, 2.0) for k in _settle(pp, t).kill]
    assert kills == [("c", "Container c failed startup probe, will be restarted")]


def test_a_grpc_probe_is_not_run_and_the_pod_is_told_so_once(pool: ThreadPoolExecutor) -> None:
    probe = Probe(READINESS, "grpc", port=50051)
    pp = PodProbes([probes.ContainerProbes("c", (probe,))], {"c": ({}, "/")}, pool, started=0.0)
    first = _settle(pp, 0.0)
    assert [e[1] for e in first.events] == ["ProbeNotRun"] and "grpc" in first.events[0][2]
    assert pp.ready and _settle(pp, 20.0).events == []
