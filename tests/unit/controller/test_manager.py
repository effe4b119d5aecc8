"""The manager process around the reconciler: a leader election that breaks on something
unexpected (here a Lease the apiserver answers with garbage) ends the process with exit code 1
instead of leaving a replica that is ready but never competes again. The apiserver is played by
httpx's MockTransport (what is tested is the manager's reaction, not the apiserver)."""

from __future__ import annotations

import threading

import httpx

from trainjob.controller.manager import Manager, Options
from trainjob.kube.client import Client
from trainjob.kube.config import Config


def test_a_broken_leader_election_exits_with_code_1() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        if "/leases/" in request.url.path:
            return httpx.Response(200, text="not a Lease")  # decoded as a str
        return httpx.Response(200, json={"kind": "List", "metadata": {}, "items": []})

    client = Client(
        Config(server="https://k8s.test", token="t"), transport=httpx.MockTransport(handler)
    )
    manager = Manager(
        client,
        Options(metrics_port=None, health_port=None, leader_elect=True, retry_period=0.1,
                renew_deadline=0.5, lease_duration=1.0),
    )  # fmt: skip
    result: list[int] = []
    t = threading.Thread(target=lambda: result.append(manager.run()), daemon=True)
    t.start()
    t.join(15)
    assert not t.is_alive(), "the manager kept running without leader election"
    assert result == [1]
    assert not manager.ready()
