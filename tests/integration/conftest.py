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
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.integration.control_plane import ApiError, ControlPlane, run_setup

__all__ = ["ApiError", "ControlPlane"]

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

    run_setup(
        ["bash", str(HACK / "build-control-plane.sh")],
        logs / "build.log",
        env,
        "hack/build-control-plane.sh",
    )
    up = [str(HACK / "testenv"), "up", "--no-build", "--kubeconfig", str(kubeconfig)]
    try:
        run_setup(up, logs / "testenv-up.log", env, "hack/testenv up")
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
