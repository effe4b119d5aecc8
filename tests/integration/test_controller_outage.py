"""An apiserver outage, as the controller sees one: every connection drops and new ones are
refused for a while (a TCP proxy in front of the real apiserver plays the restart). The
controller keeps running, backs off, lists again when the apiserver is back, and builds the
TrainJobs created meanwhile."""

from __future__ import annotations

import contextlib
import functools
import socket
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlparse

import pytest
import yaml
from tests.integration.controller_harness import start_controller, trainjob, wait_for

from trainjob.kube import Client
from trainjob.kube import resources as r

if TYPE_CHECKING:
    from tests.integration.conftest import ControlPlane

pytest_plugins = ["tests.integration.controller_fixtures"]
pytestmark = pytest.mark.integration


class FlakyProxy:
    """Forwards TCP to ``target``; :meth:`outage` drops every connection and refuses new ones."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.down = threading.Event()
        self.cut = threading.Event()  # set once an outage dropped the connections it had
        self.conns: set[socket.socket] = set()
        self.lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            if self.down.is_set():
                client.close()
                continue
            try:
                upstream = socket.create_connection(self.target)
            except OSError:
                client.close()
                continue
            with self.lock:
                self.conns |= {client, upstream}
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    def _pipe(self, src: socket.socket, dst: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := src.recv(65536):
                dst.sendall(data)
        for s in (src, dst):
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)

    def outage(self, seconds: float, until: threading.Event | None = None) -> None:
        """Down for ``seconds``, and then until ``until`` is set (at most 120 s more)."""
        self.down.set()
        with self.lock:
            conns, self.conns = self.conns, set()
        for s in conns:
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
            s.close()
        self.cut.set()
        time.sleep(seconds)
        if until is not None:
            until.wait(120)
        self.cut.clear()
        self.down.clear()

    def close(self) -> None:
        self.listener.close()
        self.outage(0)


def test_the_controller_rides_out_an_apiserver_outage(
    control_plane: ControlPlane, kube: Client, torch_runtime: str, namespace: str, tmp_path: Path
) -> None:
    server = urlparse(control_plane.server)
    proxy = FlakyProxy((server.hostname or "127.0.0.1", server.port or 443))
    kc = yaml.safe_load(Path(control_plane.kubeconfig).read_text())
    for cluster in kc["clusters"]:
        cluster["cluster"]["server"] = f"https://127.0.0.1:{proxy.port}"
    proxied = tmp_path / "proxied.kubeconfig"
    proxied.write_text(yaml.safe_dump(kc))
    ctl = start_controller(control_plane, webhooks=False, kubeconfig=proxied)
    try:
        kube.create(r.TRAINJOBS, trainjob("before", namespace))
        wait_for(lambda: kube.get_or_none(r.JOBSETS, "before", namespace), what="first JobSet")

        # The outage lasts until the check below is done (a fixed 6 s could end first when a
        # loaded machine makes the five creates slow: then the JobSets may rightly exist).
        checked = threading.Event()
        outage = threading.Thread(target=proxy.outage, args=(6.0, checked))
        outage.start()
        wait_for(proxy.cut.is_set, what="the outage's start")
        names = [f"during-{i}" for i in range(5)]
        try:
            for n in names:
                kube.create(r.TRAINJOBS, trainjob(n, namespace))
            time.sleep(2)  # the controller, cut off, makes nothing meanwhile
            made = [n for n in names if kube.get_or_none(r.JOBSETS, n, namespace) is not None]
            assert made == [], f"JobSets made while the apiserver was away: {made}"
        finally:
            checked.set()
            outage.join()

        for n in names:
            wait_for(
                functools.partial(kube.get_or_none, r.JOBSETS, n, namespace), timeout=60, what=n
            )
        assert ctl.proc.poll() is None, "the controller survived"
        assert ctl.ready()
        assert "list/watch failed (retrying in" in ctl.log()
    finally:
        ctl.stop()
        proxy.close()
