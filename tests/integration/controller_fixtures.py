"""Fixtures for the controller's integration tests (load with
``pytest_plugins = ["tests.integration.controller_fixtures"]``): a kube client, the built-in
torch-distributed runtime, and a controller process per test module."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest
from tests.integration.controller_harness import Controller, builtin_runtime, start_controller

from trainjob.kube import Client

if TYPE_CHECKING:
    from tests.integration.conftest import ControlPlane


@pytest.fixture(scope="session")
def kube(control_plane: ControlPlane) -> Iterator[Client]:
    """The tests' own client. Its request timeout is the apiserver's own (60 s), not the
    client's default 30 s: on CI's 2 cores at load 10+ a GET once took over 30 s to answer
    (test_podgroups_follow_suspension), and a test's wait_for already bounds a real failure."""
    client = Client.from_config(str(control_plane.kubeconfig), timeout=60.0)
    yield client
    client.close()


@pytest.fixture(scope="session")
def torch_runtime(kube: Client) -> str:
    """The built-in ``torch-distributed`` ClusterTrainingRuntime, installed once."""
    kube.apply(builtin_runtime("torch-distributed"), field_manager="trainjob-tests")
    return "torch-distributed"


@pytest.fixture(scope="module")
def controller(
    control_plane: ControlPlane, torch_runtime: str, request: pytest.FixtureRequest
) -> Iterator[Controller]:
    """One controller (webhooks on loopback, no leader election) for a test module."""
    failed_before = request.session.testsfailed
    ctl = start_controller(control_plane)
    yield ctl
    code = ctl.stop()
    if code not in (0, None) or request.session.testsfailed > failed_before:
        print(f"controller exited {code}; log {ctl.log_path}:\n{ctl.log()[-6000:]}")
