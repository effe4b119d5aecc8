"""Run ``trainjob controller`` as a real subprocess against the test control plane, and wait for
things to happen on the apiserver.

Helpers for the controller's integration tests; the fixtures (``kube``, ``torch_runtime``,
``controller``) are in ``controller_fixtures.py``, loaded with ``pytest_plugins``. The controller
runs with ``--self-signed-webhooks`` on loopback, under webhook configuration names of its own
(:func:`own_webhook_configurations`), so the apiserver calls our admission webhooks for real; its
log is printed when a test fails.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol, TypeVar, cast

import yaml

from trainjob.controller.webhooks.serving import DEV_MUTATING, DEV_VALIDATING
from trainjob.kube import Client
from trainjob.kube import resources as r
from trainjob.kube.errors import Conflict, NotFound
from trainjob.local.job.ports import free_port

REPO = Path(__file__).resolve().parents[2]
Obj = dict[str, Any]
T = TypeVar("T")


# What the controller logs once a server listens (trainjob.kube.http.serve): the
# harness starts it with --metrics-port 0 and --health-port 0 and reads the ports the kernel
# gave from these lines, so no port is picked here and lost to another process before the
# controller binds it (a loaded CI machine runs many servers at once).
SERVING = re.compile(r"serving (?P<name>[\w-]+) on \S+:(?P<port>\d+)$", re.MULTILINE)


def serving_ports(log: str) -> dict[str, int]:
    """The ports a controller's log says it serves on, by server name (health, metrics,
    webhooks, status); the last line of each name wins."""
    return {m["name"]: int(m["port"]) for m in SERVING.finditer(log)}


# Each server's port flag: a port named there (not 0) is the server's port, whatever the log says
# (a controller run with --log-level WARNING logs no SERVING line).
PORT_FLAGS = {
    "health": "--health-port",
    "metrics": "--metrics-port",
    "webhooks": "--webhook-port",
    "status": "--status-server-port",
}


def named_port(args: Sequence[str], name: str) -> int:
    """The port the last ``PORT_FLAGS[name]`` of ``args`` names (0: none, or port 0)."""
    flag = PORT_FLAGS.get(name)
    values = [args[i + 1] for i, a in enumerate(args[:-1]) if a == flag]
    return max(int(values[-1]), 0) if values else 0


class HasKubeconfig(Protocol):
    """What :func:`start_controller` needs of a control plane: its admin kubeconfig."""

    @property
    def kubeconfig(self) -> Path: ...


@dataclass(frozen=True)
class Apiserver:
    """An apiserver known by its admin kubeconfig alone (a benchmark's own control plane), for
    :func:`start_controller`."""

    kubeconfig: Path


def python_controller(args: list[str]) -> list[str]:
    """The command that runs ``trainjob <args>`` (``args`` start with ``controller``)."""
    return [
        sys.executable,
        "-c",
        "import sys; from trainjob.cli import main; sys.exit(main())",
        *args,
    ]


@dataclass
class Controller:
    """One ``trainjob controller`` process."""

    proc: subprocess.Popen[bytes]
    log_path: Path
    args: list[str] = field(default_factory=list)
    admin_kubeconfig: Path | None = None
    own_webhook_names: bool = False
    """Whether its webhook configurations' names are its alone (:func:`own_webhook_configurations`,
    given by the harness), so that whatever has them is its registration."""
    """The control plane's own (not the controller's, which may go through a test's proxy)."""
    _ports: dict[str, int] = field(default_factory=dict)

    def port(self, name: str) -> int:
        """The port the server ``name`` listens on: the one its flag named, else the kernel's
        choice its log reports (0 while the log has not said yet)."""
        if name not in self._ports:
            self._ports.update(serving_ports(self.log()))
            self._ports.update({n: p for n in PORT_FLAGS if (p := named_port(self.args, n))})
        return self._ports.get(name, 0)

    @property
    def metrics_port(self) -> int:
        return self.port("metrics")

    @property
    def health_port(self) -> int:
        return self.port("health")

    def get(self, port: int, path: str) -> tuple[int, str]:
        return http_get(port, path)

    def ready(self) -> bool:
        return self.get(self.health_port, "/readyz")[0] == 200

    def metrics(self) -> str:
        return self.get(self.metrics_port, "/metrics")[1]

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 20) -> int | None:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self.forget_webhooks()
        return self.proc.returncode

    def kill(self) -> None:
        """SIGKILL: no clean-up by the controller (its lease stays behind); the harness then
        removes the webhook registrations that point at it (:meth:`forget_webhooks`)."""
        self.stop(signal.SIGKILL)

    def webhook_configurations(self) -> list[tuple[r.Resource, str]]:
        """The dev webhook configurations this controller registers (its own names, given by
        :func:`start_controller`; the controller's defaults where none were given)."""
        if "--self-signed-webhooks" not in self.args:
            return []

        def named(flag: str, default: str) -> str:
            return self.args[self.args.index(flag) + 1] if flag in self.args else default

        return [
            (r.MUTATING_WEBHOOK_CONFIGURATIONS, named(MUTATING_FLAG, DEV_MUTATING)),
            (r.VALIDATING_WEBHOOK_CONFIGURATIONS, named(VALIDATING_FLAG, DEV_VALIDATING)),
        ]

    def forget_webhooks(self) -> list[str]:
        """Delete the dev webhook configurations that still send the apiserver to this (now
        stopped) controller's port, as its clean stop would have: one left by a SIGKILLed or
        hung controller has failurePolicy Fail, so every later create on the shared apiserver
        would be refused, or wait out the webhook's timeout when another server got the port.
        Only when they are still ours (pointing at its port, with a resourceVersion
        precondition: another controller given the same names may have registered itself
        since; where its log never told the port, e.g. at ``--log-level WARNING``, only names
        that are its alone); what was deleted."""
        port = self.port("webhooks")
        configurations = self.webhook_configurations()
        if not configurations or not (port or self.own_webhook_names):
            return []
        deleted: list[str] = []
        kube = Client.from_config(
            str(self.admin_kubeconfig or self.args[self.args.index("--kubeconfig") + 1])
        )
        try:
            for res, name in configurations:
                cfg = kube.get_or_none(res, name)
                if cfg is None or (port and not points_at(cfg, port)):
                    continue
                rv = cfg["metadata"]["resourceVersion"]
                with contextlib.suppress(Conflict, NotFound):  # re-registered or gone meanwhile
                    kube.delete(res, name, preconditions={"resourceVersion": rv})
                    deleted.append(name)
        except Exception as e:  # the control plane may be gone already (session teardown)
            print(f"controller on webhook port {port}: removing its registrations: {e!r}")
        finally:
            kube.close()
        return deleted


def http_get(port: int, path: str, timeout: float = 5) -> tuple[int, str]:
    """GET ``http://127.0.0.1:<port><path>``: (status, body), and (0, "") when nothing answers
    (or ``port`` is 0: not listening yet) — a probe, for polling with :func:`wait_for`."""
    if not port:
        return 0, ""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=timeout) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()
    except OSError:
        return 0, ""


def points_at(webhook_configuration: Obj, port: int) -> bool:
    """Whether any webhook of ``webhook_configuration`` calls a loopback URL on ``port``."""
    for hook in webhook_configuration.get("webhooks") or []:
        url = (hook.get("clientConfig") or {}).get("url") or ""
        if urllib.parse.urlsplit(url).port == port:
            return True
    return False


ADDRESS_IN_USE = "Address already in use"  # the controller's "cannot serve ..." error
PORT_ATTEMPTS = 4
MUTATING_FLAG = "--mutating-webhook-configuration"
VALIDATING_FLAG = "--validating-webhook-configuration"


def own_webhook_configurations() -> list[str]:
    """Flags naming a controller's dev webhook configurations after it alone
    (``trainjob-dev-...-<random>``): two controllers on one apiserver (two tests' fixtures, a
    benchmark beside a test) then register two pairs, and neither overwrites, nor at its stop
    deletes, the other's (with the shared default names the later one took the earlier one's
    over, and its stop left the earlier one with no webhooks at all)."""
    tag = uuid.uuid4().hex[:12]
    return [MUTATING_FLAG, f"{DEV_MUTATING}-{tag}", VALIDATING_FLAG, f"{DEV_VALIDATING}-{tag}"]


def start_controller(
    cp: HasKubeconfig,
    *extra: str,
    leader_elect: bool = False,
    webhooks: bool = True,
    wait_ready: bool = True,
    kubeconfig: Path | None = None,
    env: dict[str, str] | None = None,
    port_args: Callable[[int], Sequence[str]] | None = None,
    command: Callable[[list[str]], list[str]] = python_controller,
    log_path: Path | None = None,
    ready_timeout: float = 60,
) -> Controller:
    """Start ``trainjob controller`` and wait for /readyz. Every server binds port 0 (read back
    with :meth:`Controller.port`), except one a test must name before the start (a URL with
    the port in it): ``port_args`` makes those flags from a free port, and a controller that
    lost it to another process meanwhile (exited with "Address already in use") is started
    again with another one (up to :data:`PORT_ATTEMPTS` times).

    ``command`` turns the controller's arguments into the command line (a benchmark's: its own
    Python prelude, a profiler in front), ``log_path`` is where its output goes (a temporary
    file by default), ``ready_timeout`` how long one start may take to be ready."""
    for attempt in range(1, PORT_ATTEMPTS + 1):
        named = list(port_args(free_port())) if port_args is not None else []
        ctl = _start_controller(
            cp, [*extra, *named], leader_elect, webhooks, kubeconfig, env, command, log_path
        )
        if not wait_ready:
            return ctl

        with contextlib.suppress(AssertionError):  # not ready in time: as an exit, below
            wait_for(functools.partial(_up, ctl), timeout=ready_timeout, what="controller /readyz")
        if ctl.ready():
            return ctl
        ctl.kill()
        log = ctl.log()
        if port_args is not None and ADDRESS_IN_USE in log and attempt < PORT_ATTEMPTS:
            print(f"controller lost its port ({named}); starting it again with another")
            continue
        raise AssertionError(f"controller did not become ready; log:\n{log[-4000:]}")
    raise AssertionError("unreachable")


def _up(ctl: Controller) -> bool:
    """Ready, or exited (no use waiting on)."""
    return ctl.ready() or ctl.proc.poll() is not None


def _start_controller(
    cp: HasKubeconfig,
    extra: list[str],
    leader_elect: bool,
    webhooks: bool,
    kubeconfig: Path | None,
    env: dict[str, str] | None,
    command: Callable[[list[str]], list[str]],
    log_path: Path | None,
) -> Controller:
    args = [
        "controller",
        "--kubeconfig",
        str(kubeconfig or cp.kubeconfig),
        "--bind-host",
        "127.0.0.1",
        "--metrics-port",
        "0",  # the kernel's choice, read back from the log (SERVING)
        "--health-port",
        "0",
        "--leader-elect" if leader_elect else "--no-leader-elect",
        "--leader-election-namespace",
        "default",
        *extra,
    ]
    own_names = False
    if webhooks:
        args += ["--self-signed-webhooks", "--webhook-host", "127.0.0.1", "--webhook-port", "0"]
        own_names = MUTATING_FLAG not in extra  # (a test may name them itself)
        if own_names:
            args += own_webhook_configurations()
    if not any(a in extra for a in ("--no-status-server", "--status-server-port")):
        # on loopback, any free port: several controllers run at once in these tests
        args += ["--status-server-host", "127.0.0.1", "--status-server-port", "0"]
    if log_path is None:
        log_path = Path(tempfile.mkstemp(prefix="trainjob-controller-", suffix=".log")[1])
    env = {**{k: v for k, v in os.environ.items() if k != "KUBECONFIG"}, **(env or {})}
    proc = subprocess.Popen(
        command(args),
        stdout=open(log_path, "wb"),  # noqa: SIM115 - the child owns it
        stderr=subprocess.STDOUT,
        env=env,
        cwd=REPO,
    )
    return Controller(
        proc, log_path, args, admin_kubeconfig=cp.kubeconfig, own_webhook_names=own_names
    )


def wait_for(
    fn: Callable[[], T | Literal[False] | None],
    timeout: float = 60,
    interval: float = 0.1,
    what: str = "condition",
) -> T:
    """Poll ``fn`` until it returns something truthy (that value, no longer Optional); fail
    with ``what`` after ``timeout``. The default is generous (60 s; 30 s before): CI's 2 cores
    run the tiers in parallel at load 10+, where a controller's reconcile, a watch's relist or a
    CLI's start can take many seconds; a deadline only bounds a failure's wait."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = fn()
        if last:
            return cast(T, last)
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what} (last: {last!r})")


def builtin_runtime(name: str = "torch-distributed") -> Obj:
    doc: Obj = yaml.safe_load((REPO / "manifests" / "runtimes" / f"{name}.yaml").read_text())
    return doc


def trainjob(name: str, namespace: str, runtime: str = "torch-distributed", **spec: Any) -> Obj:
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"runtimeRef": {"name": runtime}, **spec},
    }


def conditions(kube: Client, name: str, namespace: str) -> dict[str, Obj]:
    tj = kube.get(r.TRAINJOBS, name, namespace)
    return {c["type"]: c for c in (tj.get("status") or {}).get("conditions") or []}
