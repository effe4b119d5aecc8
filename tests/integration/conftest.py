"""Fixtures for tests against a real control plane: etcd + kube-apiserver built from Go modules.

`control_plane` (session scope) runs hack/build-control-plane.sh (a no-op when the binaries are
cached; a cold build takes several minutes) and `hack/testenv up` into a temporary state dir, and
tears it down at the end of the session.  `namespace` gives each test a fresh namespace.

Environment:
  TRAINJOB_SKIP_INTEGRATION=1   skip these tests
  TRAINJOB_TESTENV_KEEP=1       keep the state dir (logs, etcd data) after the session
  TRAINJOB_CACHE                binary cache root (default ~/.cache/trainjob)
"""

from __future__ import annotations

import json
import os
import re
import shutil
import ssl
import subprocess
import tempfile
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
HACK = REPO / "hack"
INTEGRATION_DIR = Path(__file__).resolve().parent


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "integration: needs the real test control plane (hack/testenv)"
    )


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if INTEGRATION_DIR in Path(str(item.path)).resolve().parents:
            item.add_marker(pytest.mark.integration)


class ApiError(Exception):
    def __init__(self, status: int, body: Any, method: str, path: str) -> None:
        msg = body.get("message") if isinstance(body, dict) else body
        super().__init__(f"{method} {path} -> {status}: {msg}")
        self.status = status
        self.body = body


@dataclass
class ControlPlane:
    """A running etcd + kube-apiserver, and a small stdlib REST client for it."""

    state_dir: Path
    kubeconfig: Path
    server: str
    token: str
    ca_file: Path
    client_cert: Path
    client_key: Path
    version: str
    env: dict[str, Any] = field(repr=False)

    @property
    def auth_headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        content_type: str = "application/json",
        ok: tuple[int, ...] = (200, 201, 202),
        timeout: float = 30,
    ) -> Any:
        """Send a request; return the decoded JSON body, raise ApiError if status not in `ok`."""
        data = None
        if body is not None:
            data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
        req = urllib.request.Request(self.server + path, data=data, method=method)
        req.add_header("Accept", "application/json")
        for k, v in self.auth_headers.items():
            req.add_header(k, v)
        if data is not None:
            req.add_header("Content-Type", content_type)
        ctx = ssl.create_default_context(cafile=str(self.ca_file))
        try:
            with urllib.request.urlopen(req, context=ctx, timeout=timeout) as resp:
                status, raw = resp.status, resp.read()
        except urllib.error.HTTPError as e:
            status, raw = e.code, e.read()
        try:
            decoded: Any = json.loads(raw) if raw else None
        except ValueError:
            decoded = raw.decode(errors="replace")
        if status not in ok:
            raise ApiError(status, decoded, method, path)
        return decoded

    def get(self, path: str, **kw: Any) -> Any:
        return self.request("GET", path, **kw)

    def create(self, path: str, obj: dict[str, Any], **kw: Any) -> Any:
        return self.request("POST", path, obj, **kw)

    def delete(self, path: str, **kw: Any) -> Any:
        return self.request("DELETE", path, **kw)

    def apply(self, path: str, obj: dict[str, Any] | str, manager: str = "trainjob-tests") -> Any:
        """Server-side apply (path names the object, e.g. .../jobsets/NAME)."""
        sep = "&" if "?" in path else "?"
        body = obj if isinstance(obj, str) else json.dumps(obj)
        return self.request(
            "PATCH",
            f"{path}{sep}fieldManager={manager}&force=true",
            body,
            content_type="application/apply-patch+yaml",
        )

    def exists(self, path: str) -> bool:
        try:
            self.get(path)
        except ApiError as e:
            if e.status == 404:
                return False
            raise
        return True


def _run(cmd: list[str], log: Path, env: dict[str, str], what: str) -> None:
    """Run a set-up command; fail the session with its log tail if it fails.

    ``hack/testenv up`` is not retried here: it picks other ports itself when one it chose was
    taken meanwhile, and the "etcd exited" flake with an empty log (a liveness check that read
    ``/proc/<pid>/cmdline`` while the child was still inside execve) is fixed there.
    """
    with open(log, "ab") as f:
        rc = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, env=env, cwd=REPO).returncode
    if rc != 0:
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-60:])
        msg = f"{what} failed (exit {rc}); full log {log}; last lines:\n{tail}"
        pytest.fail(msg, pytrace=False)


@pytest.fixture(scope="session")
def control_plane() -> Iterator[ControlPlane]:
    if os.environ.get("TRAINJOB_SKIP_INTEGRATION") == "1":
        pytest.skip("TRAINJOB_SKIP_INTEGRATION=1")
    for tool in ("go", "openssl"):
        if shutil.which(tool) is None:
            pytest.skip(f"'{tool}' is not on PATH: cannot build or start the test control plane")

    state = Path(tempfile.mkdtemp(prefix="trainjob-testenv-"))
    logs = Path(tempfile.mkdtemp(prefix="trainjob-testenv-logs-"))
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    env["TRAINJOB_TESTENV_DIR"] = str(state / "cp")
    kubeconfig = state / "kubeconfig"

    _run(
        ["bash", str(HACK / "build-control-plane.sh")],
        logs / "build.log",
        env,
        "hack/build-control-plane.sh",
    )
    up = [str(HACK / "testenv"), "up", "--no-build", "--kubeconfig", str(kubeconfig)]
    try:
        _run(up, logs / "testenv-up.log", env, "hack/testenv up")
        info = json.loads((state / "cp" / "env.json").read_text())
        cp = ControlPlane(
            state_dir=state / "cp",
            kubeconfig=kubeconfig,
            server=info["server"],
            token=info["token"],
            ca_file=Path(info["ca_file"]),
            client_cert=Path(info["client_cert"]),
            client_key=Path(info["client_key"]),
            version=info.get("version") or "",
            env=info,
        )
        yield cp
    finally:
        down = [str(HACK / "testenv"), "down"]
        if os.environ.get("TRAINJOB_TESTENV_KEEP") == "1":
            down.append("--keep")
        subprocess.run(
            down,
            env=env,
            cwd=REPO,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            check=False,
        )
        if os.environ.get("TRAINJOB_TESTENV_KEEP") != "1":
            shutil.rmtree(state, ignore_errors=True)
            shutil.rmtree(logs, ignore_errors=True)


@pytest.fixture
def namespace(control_plane: ControlPlane, request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh namespace per test, deleted afterwards (without kube-controller-manager it stays
    Terminating; the whole control plane goes away at the end of the session)."""
    base = re.sub(r"[^a-z0-9-]+", "-", request.node.name.lower()).strip("-")[:40].strip("-")
    name = f"{base or 'test'}-{uuid.uuid4().hex[:6]}"
    control_plane.create(
        "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
    )
    yield name
    control_plane.request("DELETE", f"/api/v1/namespaces/{name}", ok=(200, 202, 404))
