"""The controller harness itself (``controller_harness.py``), on the session's apiserver:

* a port a test had to name before the start (``port_args``), taken by another process before
  the controller binds it, makes the harness start the controller again on another port, not
  fail (every other server binds port 0 and its port is read back from the log);
* upstream's controller (``upstream_harness``: a Go binary, which cannot report a port 0 back)
  that found a port taken is started again on other ports;
* a controller that is SIGKILLed (no clean stop) leaves no webhook registration behind: the dev
  configurations pointing at its dead port are removed by the harness, so a later create on the
  shared apiserver is not refused by, nor waits on, a webhook nobody serves;
* the benchmarks' controller (benchmarks/controller.py: started by this harness, at
  ``--log-level WARNING``, so no port is read from its log) whose health port was taken before it
  bound it is started again on another, and leaves no webhook registration behind;
* two controllers on one apiserver register webhook configurations of their own names: neither
  overwrites the other's, and one's kill or stop removes its own only (given the same names, the
  later one's registration is left to it).
"""

from __future__ import annotations

import argparse
import shutil
import socket
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from tests.integration import controller_harness as harness
from tests.integration import upstream_harness
from tests.integration.controller_harness import (
    http_get,
    own_webhook_configurations,
    points_at,
    start_controller,
    trainjob,
)

from trainjob.controller.webhooks.serving import DEV_MUTATING, DEV_VALIDATING
from trainjob.kube import Client
from trainjob.kube import resources as r
from trainjob.kube.errors import Forbidden
from trainjob.local.job import ports

if TYPE_CHECKING:
    from tests.integration.conftest import ControlPlane

pytest_plugins = ["tests.integration.controller_fixtures"]
pytestmark = pytest.mark.integration


def test_a_named_port_taken_before_the_controller_binds_it_is_replaced_by_another(
    control_plane: ControlPlane, torch_runtime: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    taken = socket.create_server(("127.0.0.1", 0))  # another process's server, meanwhile
    taken_port = taken.getsockname()[1]
    handed: list[int] = []

    def free_port() -> int:  # the first pick is the port that is (by then) taken
        handed.append(taken_port if not handed else ports.free_port())
        return handed[-1]

    monkeypatch.setattr(harness, "free_port", free_port)
    ctl = None
    try:
        ctl = start_controller(
            control_plane,
            port_args=lambda port: (
                "--status-server-host",
                "127.0.0.1",
                "--status-server-port",
                str(port),
            ),
        )
        assert len(handed) == 2, handed
        assert ctl.port("status") == handed[1] != taken_port
        assert ctl.ready()
        # the servers on port 0 were read back from the log, and answer there
        assert ctl.health_port not in (0, taken_port) and ctl.metrics_port not in (0, taken_port)
        assert ctl.get(ctl.health_port, "/healthz") == (200, "ok\n")
        assert 'workqueue_depth{name="trainjob"}' in ctl.metrics()
    finally:
        taken.close()
        if ctl is not None:
            ctl.stop()


def test_a_killed_controller_leaves_no_webhook_registration_behind(
    control_plane: ControlPlane, kube: Client, torch_runtime: str, namespace: str
) -> None:
    ctl = start_controller(control_plane)
    port = ctl.port("webhooks")
    assert port
    configurations = ctl.webhook_configurations()
    assert [res.kind for res, _ in configurations] == [
        "MutatingWebhookConfiguration",
        "ValidatingWebhookConfiguration",
    ]
    assert all(points_at(kube.get(res, name), port) for res, name in configurations)
    ctl.kill()  # SIGKILL: the controller's own clean-up never runs
    assert ctl.proc.returncode == -9
    assert all(kube.get_or_none(res, name) is None for res, name in configurations)
    # with no webhook left, the apiserver admits a TrainJob at once (a dead one with
    # failurePolicy Fail would refuse it, or hold it for its timeout)
    created = kube.create(r.TRAINJOBS, trainjob("after-kill", namespace, "no-such-runtime"))
    assert created["metadata"]["name"] == "after-kill"


def test_the_benchmarks_controller_that_lost_its_health_port_is_started_again(
    control_plane: ControlPlane, kube: Client, torch_runtime: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from benchmarks import controller as bench

    taken = socket.create_server(("127.0.0.1", 0))  # another process's server, meanwhile
    taken_port = taken.getsockname()[1]
    handed: list[int] = []

    def free_port() -> int:  # the first pick is the port that is (by then) taken
        handed.append(taken_port if not handed else ports.free_port())
        return handed[-1]

    def dev_mutating() -> set[str]:
        items, _ = kube.list_all(r.MUTATING_WEBHOOK_CONFIGURATIONS)
        return {
            o["metadata"]["name"] for o in items if o["metadata"]["name"].startswith(DEV_MUTATING)
        }

    monkeypatch.setattr(harness, "free_port", free_port)
    args = argparse.Namespace(workers=1, no_webhooks=False, no_status_server=True, jobs=0)
    before = dev_mutating()
    log = Path(tempfile.gettempdir()) / "trainjob-bench-controller-harness-test.log"
    try:
        with bench.trainjob_controller(kube, str(control_plane.kubeconfig), args, "harness-test"):
            assert len(handed) == 2, handed
            assert handed[1] != taken_port
            assert http_get(handed[1], "/readyz")[0] == 200
            assert "serving health" not in log.read_text()  # (WARNING: the port was named)
            (own,) = dev_mutating() - before  # registered under a name of its own
            assert own != DEV_MUTATING
    finally:
        taken.close()
    assert dev_mutating() == before
    log.unlink(missing_ok=True)


def test_two_controllers_keep_their_own_registrations_and_remove_only_their_own(
    control_plane: ControlPlane, kube: Client, torch_runtime: str, namespace: str
) -> None:
    first = start_controller(control_plane)
    second = start_controller(control_plane)
    try:
        mine, theirs = first.webhook_configurations(), second.webhook_configurations()
        names = {name for _, name in mine + theirs}
        assert len(names) == 4, (mine, theirs)  # not the one shared trainjob-dev-... pair
        assert DEV_MUTATING not in names and DEV_VALIDATING not in names
        assert all(points_at(kube.get(res, name), first.port("webhooks")) for res, name in mine)
        assert all(points_at(kube.get(res, name), second.port("webhooks")) for res, name in theirs)
        first.kill()
        assert all(kube.get_or_none(res, name) is None for res, name in mine)
        assert all(points_at(kube.get(res, name), second.port("webhooks")) for res, name in theirs)
        # the live controller's webhooks still act: a TrainJob for a missing runtime is refused
        with pytest.raises(Forbidden, match="denied the request"):
            kube.create(r.TRAINJOBS, trainjob("refused", namespace, "no-such-runtime"))
        second.stop()  # its clean stop removes its own
        assert all(kube.get_or_none(res, name) is None for res, name in theirs)
    finally:
        first.kill()
        second.stop()


def test_a_registration_another_controller_made_since_is_left_to_it(
    control_plane: ControlPlane, kube: Client, torch_runtime: str
) -> None:
    names = own_webhook_configurations()  # both given the same names
    first = start_controller(control_plane, *names)
    second = start_controller(control_plane, *names)  # registers itself over the first
    ((_, validating),) = second.webhook_configurations()[1:]
    try:
        first.kill()
        cfg = kube.get(r.VALIDATING_WEBHOOK_CONFIGURATIONS, validating)
        assert points_at(cfg, second.port("webhooks")), "the live controller's registration stays"
    finally:
        first.kill()
        second.stop()
    assert kube.get_or_none(r.VALIDATING_WEBHOOK_CONFIGURATIONS, validating) is None


def test_upstreams_controller_that_found_its_port_taken_is_started_again_on_others(
    control_plane: ControlPlane, kube: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    if shutil.which("go") is None:
        pytest.skip("'go' is not on PATH: cannot build the upstream controller")
    build = upstream_harness.build()  # cached by version (test_upstream_diff's too)
    taken = socket.create_server(("127.0.0.1", 0))  # another process's server, meanwhile
    taken_port = taken.getsockname()[1]
    handed: list[list[int]] = []

    def free_ports(n: int) -> list[int]:  # the first webhook port is the one (by then) taken
        picked = ports.free_ports(n)
        if not handed:
            picked[0] = taken_port
        handed.append(picked)
        return picked

    monkeypatch.setattr(upstream_harness, "free_ports", free_ports)
    up = None
    try:
        up = upstream_harness.start(build, control_plane.kubeconfig, kube, webhooks=False)
        assert len(handed) == 2, handed
        assert up.webhook_port == handed[1][0] != taken_port
        assert up.ready() and up.webhooks_serving()
    finally:
        taken.close()
        if up is not None:
            up.stop()
