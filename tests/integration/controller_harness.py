"""Run ``trainjob controller`` as a real subprocess against the test control plane, and wait for
things to happen on the apiserver.

Helpers for the controller's integration tests; the fixtures (``kube``, ``torch_runtime``,
``controller``) are in ``controller_fixtures.py``, loaded with ``pytest_plugins``. The controller runs with ``--self-signed-webhooks`` on loopback, so the
apiserver calls our admission webhooks for real; its log is printed when a test fails.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar, cast

import yaml

from trainjob.controller.http import free_ports
from trainjob.kube import Client
from trainjob.kube import resources as r

if TYPE_CHECKING:
    from tests.integration.conftest import ControlPlane

REPO = Path(__file__).resolve().parents[2]
Obj = dict[str, Any]
T = TypeVar("T")


@dataclass
class Controller:
    """One ``trainjob controller`` process."""

    proc: subprocess.Popen[bytes]
    log_path: Path
    metrics_port: int
    health_port: int
    args: list[str] = field(default_factory=list)

    def get(self, port: int, path: str) -> tuple[int, str]:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as resp:
                return resp.status, resp.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()
        except OSError:
            return 0, ""

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
        return self.proc.returncode

    def kill(self) -> None:
        """SIGKILL: no clean-up at all (the lease and webhook registrations stay behind)."""
        self.stop(signal.SIGKILL)


def start_controller(
    cp: ControlPlane,
    *extra: str,
    leader_elect: bool = False,
    webhooks: bool = True,
    wait_ready: bool = True,
    kubeconfig: Path | None = None,
    env: dict[str, str] | None = None,
) -> Controller:
    metrics_port, health_port = free_ports(2)
    args = [
        "controller",
        "--kubeconfig",
        str(kubeconfig or cp.kubeconfig),
        "--bind-host",
        "127.0.0.1",
        "--metrics-port",
        str(metrics_port),
        "--health-port",
        str(health_port),
        "--leader-elect" if leader_elect else "--no-leader-elect",
        "--leader-election-namespace",
        "default",
        *extra,
    ]
    if webhooks:
        args += ["--self-signed-webhooks", "--webhook-host", "127.0.0.1", "--webhook-port", "0"]
    if not any(a in extra for a in ("--no-status-server", "--status-server-port")):
        # on loopback, any free port: several controllers run at once in these tests
        args += ["--status-server-host", "127.0.0.1", "--status-server-port", "0"]
    log_path = Path(tempfile.mkstemp(prefix="trainjob-controller-", suffix=".log")[1])
    env = {**{k: v for k, v in os.environ.items() if k != "KUBECONFIG"}, **(env or {})}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; from trainjob.cli import main; sys.exit(main())",
            *args,
        ],
        stdout=open(log_path, "wb"),  # noqa: SIM115 - the child owns it
        stderr=subprocess.STDOUT,
        env=env,
        cwd=REPO,
    )
    ctl = Controller(proc, log_path, metrics_port, health_port, args)
    if wait_ready:
        try:
            wait_for(ctl.ready, timeout=60, what="controller /readyz")
        except AssertionError:
            ctl.kill()
            raise AssertionError(
                f"controller did not become ready; log:\n{ctl.log()[-4000:]}"
            ) from None
    return ctl


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
