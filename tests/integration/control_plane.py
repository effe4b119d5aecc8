"""The test control plane as tests see it: a small stdlib REST client (``ControlPlane``) and the
set-up command runner, shared by the fixtures of ``tests/integration`` (etcd + kube-apiserver)
and ``tests/cluster`` (the whole cluster of ``hack/testenv up --cluster``)."""

from __future__ import annotations

import json
import ssl
import subprocess
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]


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


def run_setup(cmd: list[str], log: Path, env: dict[str, str], what: str) -> None:
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
