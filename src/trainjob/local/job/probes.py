"""Container probes run locally, as the kubelet runs them: readiness, startup and liveness.

A pod's readiness is what ``dependsOn: [{name: X, status: Ready}]`` waits for (the launcher of an
MPI or parameter-server runtime starts once its workers listen) and what ``jobsStatus.ready``
counts. The kubelet's rules, kept here:

* a container with no readiness probe is ready once it runs; with one, it is not ready until the
  probe has succeeded ``successThreshold`` times in a row, and stops being ready after
  ``failureThreshold`` failures in a row;
* a startup probe, while it has not succeeded, holds back the other probes and readiness; after
  ``failureThreshold`` failures the container is killed (``exit code 137``), as is a container whose
  liveness probe failed ``failureThreshold`` times in a row;
* probes start ``initialDelaySeconds`` after the container, run every ``periodSeconds`` (10) and
  fail after ``timeoutSeconds`` (1);
* ``exec`` runs the command with the container's env and working directory and succeeds on exit 0;
  ``tcpSocket`` succeeds when a TCP connection opens; ``httpGet`` when the answer is 200-399. Ports
  (numbers or a container port's name) and hosts are mapped as the pod's endpoints are: the pod's
  own address is 127.0.0.1.
* ``grpc`` probes are not run locally (no gRPC client in the standard library): they count as
  succeeding, and the pod gets an event saying so.

Probes run on a small thread pool so a slow one never holds up the supervisor's tick; the
supervisor calls :meth:`PodProbes.tick` and reads :attr:`PodProbes.ready`.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

Obj = dict[str, Any]

READINESS, LIVENESS, STARTUP = "Readiness", "Liveness", "Startup"
_MAX_OUTPUT = 1024


@dataclass(frozen=True)
class Probe:
    """One probe of one container, its ports and hosts already mapped onto this machine."""

    kind: str  # Readiness | Liveness | Startup
    action: str  # exec | tcpSocket | httpGet | grpc
    argv: tuple[str, ...] = ()
    host: str = "127.0.0.1"
    port: int = 0
    path: str = "/"
    scheme: str = "HTTP"
    headers: tuple[tuple[str, str], ...] = ()
    initial_delay: float = 0.0
    period: float = 10.0
    timeout: float = 1.0
    success_threshold: int = 1
    failure_threshold: int = 3


@dataclass(frozen=True)
class ContainerProbes:
    container: str
    probes: tuple[Probe, ...] = ()

    def of(self, kind: str) -> Probe | None:
        return next((p for p in self.probes if p.kind == kind), None)


def _int(value: Any, default: int, least: int) -> int:
    return (
        max(int(value), least)
        if isinstance(value, int) and not isinstance(value, bool)
        else default
    )


def parse(
    ctr: Obj,
    port_of: Callable[[int], int],
    host_of: Callable[[str], str],
    argv_of: Callable[[list[str]], list[str]],
) -> ContainerProbes:
    """The probes of a container spec. ``port_of`` maps a container port to this host's,
    ``host_of`` a probe's ``host`` (an endpoint) to an address here, ``argv_of`` rewrites an exec
    command as the container's own command is rewritten (paths, endpoints)."""
    named = {
        str(p["name"]): int(p["containerPort"])
        for p in ctr.get("ports") or ()
        if p.get("name") and isinstance(p.get("containerPort"), int)
    }

    def port(value: Any) -> int:
        if isinstance(value, str) and not value.isdigit():
            return port_of(named[value]) if value in named else 0
        return port_of(int(value)) if value is not None else 0

    out: list[Probe] = []
    for kind, key in ((READINESS, "readinessProbe"), (LIVENESS, "livenessProbe"),
                      (STARTUP, "startupProbe")):  # fmt: skip
        spec = ctr.get(key)
        if not isinstance(spec, dict):
            continue
        timing: dict[str, Any] = {
            "initial_delay": float(_int(spec.get("initialDelaySeconds"), 0, 0)),
            "period": float(_int(spec.get("periodSeconds"), 10, 1)),
            "timeout": float(_int(spec.get("timeoutSeconds"), 1, 1)),
            "success_threshold": _int(spec.get("successThreshold"), 1, 1),
            "failure_threshold": _int(spec.get("failureThreshold"), 3, 1),
        }
        if isinstance(spec.get("exec"), dict):
            cmd = [str(a) for a in spec["exec"].get("command") or ()]
            out.append(Probe(kind, "exec", argv=tuple(argv_of(cmd)), **timing))
        elif isinstance(spec.get("tcpSocket"), dict):
            tcp = spec["tcpSocket"]
            out.append(
                Probe(
                    kind,
                    "tcpSocket",
                    host=host_of(str(tcp.get("host") or "")),
                    port=port(tcp.get("port")),
                    **timing,
                )
            )
        elif isinstance(spec.get("httpGet"), dict):
            get = spec["httpGet"]
            headers = tuple(
                (str(h.get("name")), str(h.get("value", "")))
                for h in get.get("httpHeaders") or ()
                if h.get("name")
            )
            out.append(
                Probe(
                    kind,
                    "httpGet",
                    host=host_of(str(get.get("host") or "")),
                    port=port(get.get("port")),
                    path=str(get.get("path") or "/"),
                    scheme=str(get.get("scheme") or "HTTP").upper(),
                    headers=headers,
                    **timing,
                )
            )
        elif isinstance(spec.get("grpc"), dict):
            out.append(Probe(kind, "grpc", port=port(spec["grpc"].get("port")), **timing))
    return ContainerProbes(str(ctr.get("name")), tuple(out))


# ---------------------------------------------------------------------------------------------
# Running one probe


def run(probe: Probe, env: Mapping[str, str], cwd: str) -> tuple[bool, str]:
    """(succeeded, what the kubelet would say when it failed)."""
    try:
        if probe.action == "exec":
            return _exec(probe, env, cwd)
        if probe.action == "tcpSocket":
            with socket.create_connection((probe.host, probe.port), timeout=probe.timeout):
                return True, ""
        if probe.action == "httpGet":
            return _http(probe)
        return True, ""  # grpc: not run locally
    except TimeoutError:
        return False, f"{_target(probe)}: i/o timeout after {probe.timeout:g}s"
    except OSError as e:
        return False, f"{_target(probe)}: {e.strerror or e}"


def _target(probe: Probe) -> str:
    if probe.action == "httpGet":
        return f'Get "{probe.scheme.lower()}://{probe.host}:{probe.port}{probe.path}"'
    return f"dial tcp {probe.host}:{probe.port}"


def _exec(probe: Probe, env: Mapping[str, str], cwd: str) -> tuple[bool, str]:
    if not probe.argv:
        return False, "exec probe has no command"
    try:
        p = subprocess.Popen(
            list(probe.argv),
            env=dict(env),
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    except OSError as e:
        return False, f'exec "{probe.argv[0]}": {e.strerror or e}'
    try:
        out, _ = p.communicate(timeout=probe.timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(OSError):
            os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        return False, f"command timed out after {probe.timeout:g}s"
    if p.returncode == 0:
        return True, ""
    said = out[:_MAX_OUTPUT].decode(errors="replace").strip()
    return False, said or f"command exited with code {p.returncode}"


def _http(probe: Probe) -> tuple[bool, str]:
    import http.client  # here, not at the top: it loads ssl, which the supervisor rarely needs
    import ssl

    conn: http.client.HTTPConnection
    if probe.scheme == "HTTPS":  # the kubelet does not verify the certificate either
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        conn = http.client.HTTPSConnection(
            probe.host, probe.port, timeout=probe.timeout, context=ctx
        )
    else:
        conn = http.client.HTTPConnection(probe.host, probe.port, timeout=probe.timeout)
    try:
        headers = {"User-Agent": "kube-probe/trainjob", "Accept": "*/*", **dict(probe.headers)}
        conn.request("GET", probe.path, headers=headers)
        resp = conn.getresponse()
        body = resp.read(_MAX_OUTPUT)
    finally:
        conn.close()
    if 200 <= resp.status < 400:
        return True, ""
    said = body.decode(errors="replace").strip()
    return False, f"HTTP probe failed with statuscode: {resp.status}" + (
        f": {said}" if said else ""
    )


# ---------------------------------------------------------------------------------------------
# The kubelet's probe workers, for one pod


@dataclass
class _Worker:
    probe: Probe
    next_at: float
    successes: int = 0
    failures: int = 0
    passed: bool = False  # the result after the thresholds: ready / alive / started
    future: Future[tuple[bool, str]] | None = None


@dataclass
class Outcome:
    """What one tick found: events to record and containers to kill."""

    events: list[tuple[str, str, str]] = field(default_factory=list)  # (type, reason, message)
    kill: list[tuple[str, str]] = field(default_factory=list)  # (container, why)


class PodProbes:
    """The probes of one pod's main containers, from when those containers start."""

    def __init__(
        self,
        containers: list[ContainerProbes],
        envs: Mapping[str, tuple[Mapping[str, str], str]],
        pool: ThreadPoolExecutor,
        started: float | None = None,
    ) -> None:
        start = time.monotonic() if started is None else started
        self.pool = pool
        self.envs = envs
        self.workers: dict[str, dict[str, _Worker]] = {}
        self._notes = [
            (
                "Warning",
                "ProbeNotRun",
                f'{p.kind} probe of container "{c.container}" is a grpc probe, which is not run '
                "locally (no gRPC client here): it counts as succeeding",
            )
            for c in containers
            for p in c.probes
            if p.action == "grpc"
        ]
        for c in containers:
            self.workers[c.container] = {
                p.kind: _Worker(p, start + p.initial_delay) for p in c.probes
            }
        self.exited: set[str] = set()

    def container_ready(self, name: str) -> bool:
        if name in self.exited:
            return False
        w = self.workers.get(name, {})
        if STARTUP in w and not w[STARTUP].passed:
            return False
        return w[READINESS].passed if READINESS in w else True

    @property
    def ready(self) -> bool:
        return all(self.container_ready(n) for n in self.workers)

    def tick(self, now: float | None = None) -> Outcome:
        """Collect finished probes, apply thresholds, start the probes that are due."""
        t = time.monotonic() if now is None else now
        out = Outcome(events=self._notes)
        self._notes = []
        for name, workers in self.workers.items():
            if name in self.exited:
                continue
            for kind, w in workers.items():
                if w.future is not None and w.future.done():
                    ok, msg = w.future.result()
                    w.future = None
                    self._record(name, kind, w, ok, msg, out)
            starting = STARTUP in workers and not workers[STARTUP].passed
            for kind, w in workers.items():
                if starting and kind != STARTUP:
                    continue
                if kind == STARTUP and w.passed:
                    continue  # a startup probe stops once it has succeeded
                if w.future is None and t >= w.next_at:
                    w.next_at = t + w.probe.period
                    env, cwd = self.envs.get(name, ({}, os.getcwd()))
                    w.future = self.pool.submit(run, w.probe, env, cwd)
        return out

    def _record(self, name: str, kind: str, w: _Worker, ok: bool, msg: str, out: Outcome) -> None:
        if ok:
            w.failures = 0
            w.successes += 1
            if w.successes >= w.probe.success_threshold:
                w.passed = True
            return
        was_failing = w.failures > 0
        w.successes = 0
        w.failures += 1
        if not was_failing:  # the kubelet emits one per failure; one per failing streak here
            out.events.append(("Warning", "Unhealthy", f"{kind} probe failed: {msg}"))
        if w.failures < w.probe.failure_threshold:
            return
        if kind == READINESS:
            w.passed = False
        elif kind == LIVENESS or (kind == STARTUP and not w.passed):
            why = f"Container {name} failed {kind.lower()} probe, will be restarted"
            out.events.append(("Normal", "Killing", why))
            out.kill.append((name, why))
            self.exited.add(name)

    def container_exited(self, name: str) -> None:
        self.exited.add(name)
