"""A stand-in for a kubelet's container-log endpoint, behind the real kube-apiserver.

No kubelet can run here (it needs a container runtime and a cgroup it may own), so the apiserver
of the test control plane has no node to ask for a pod's log. This serves the one endpoint the
apiserver proxies ``GET /api/v1/namespaces/NS/pods/NAME/log`` to,
``GET /containerLogs/NS/NAME/CONTAINER`` on the node's kubelet port, over TLS (the apiserver does
not verify a kubelet's certificate when it has no kubelet CA, as here). :func:`register_node`
creates the Node whose address and kubelet port are this server's; a pod bound to it
(``spec.nodeName``) has its log read here: the lines a test gives it, and with ``follow`` the
stream stays open until the test ends it, as a container's log does until the container exits.
Everything between the client and this endpoint is real: the apiserver's log REST, its
authorization, its proxying and streaming.
"""

from __future__ import annotations

import ssl
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

from trainjob.kube import Client, certs
from trainjob.kube.resources import Resource

NODES = Resource("", "v1", "nodes", "Node", namespaced=False)


class PodLog:
    """One container's log: the lines written so far, and whether the container has ended."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.ended = threading.Event()
        self._cond = threading.Condition()

    def write(self, line: str) -> None:
        with self._cond:
            self.lines.append(line)
            self._cond.notify_all()

    def end(self) -> None:
        with self._cond:
            self.ended.set()
            self._cond.notify_all()

    def follow(self) -> Iterator[str]:
        """Every line, then each new one, until the container ended."""
        sent = 0
        while True:
            with self._cond:
                while sent == len(self.lines) and not self.ended.is_set():
                    self._cond.wait(0.5)
                new, sent = self.lines[sent:], len(self.lines)
                done = self.ended.is_set() and sent == len(self.lines)
            yield from new
            if done:
                return


class Kubelet:
    """The log endpoint of one fake node: ``logs[(namespace, pod, container)]``."""

    def __init__(self) -> None:
        self.logs: dict[tuple[str, str, str], PodLog] = {}
        self.requests: list[str] = []
        self._lock = threading.Lock()

    def log(self, namespace: str, pod: str, container: str) -> PodLog:
        with self._lock:
            return self.logs.setdefault((namespace, pod, container), PodLog())


def _handler(kubelet: Kubelet) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            return None

        def do_GET(self) -> None:
            url = urlparse(self.path)
            kubelet.requests.append(self.path)
            parts = url.path.strip("/").split("/")
            if len(parts) != 4 or parts[0] != "containerLogs":
                self.send_error(404)
                return
            _, ns, pod, container = parts
            follow = parse_qs(url.query).get("follow") == ["true"]
            log = kubelet.log(ns, pod, container)
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            lines = log.follow() if follow else iter(list(log.lines))
            try:
                for line in lines:
                    data = (line + "\n").encode()
                    self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                    self.wfile.flush()
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):
                pass  # the apiserver's client went away
            self.close_connection = True

    return Handler


@contextmanager
def serving() -> Iterator[tuple[Kubelet, int]]:
    """A fake kubelet on 127.0.0.1 (TLS, a certificate of its own) and its port."""
    kubelet = Kubelet()
    bundle = certs.generate(["localhost"], ["127.0.0.1"], ca_name="fake-kubelet-ca")
    with tempfile.TemporaryDirectory(prefix="fake-kubelet-") as d:
        cert, key = Path(d) / "tls.crt", Path(d) / "tls.key"
        cert.write_bytes(bundle.cert)
        key.write_bytes(bundle.key)
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(cert, key)
        server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(kubelet))
        server.daemon_threads = True
        server.socket = ctx.wrap_socket(server.socket, server_side=True)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            yield kubelet, server.server_address[1]
        finally:
            for log in list(kubelet.logs.values()):
                log.end()
            server.shutdown()
            server.server_close()
            thread.join(timeout=10)


def register_node(kube: Client, name: str, port: int) -> None:
    """A Ready Node whose kubelet is the fake one at 127.0.0.1:``port``."""
    kube.create(NODES, {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}})
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    kube.patch_status(
        NODES,
        name,
        None,
        {
            "addresses": [{"type": "InternalIP", "address": "127.0.0.1"}],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": port}},
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True",
                    "reason": "KubeletReady",
                    "message": "a stand-in for a kubelet's log endpoint",
                    "lastHeartbeatTime": now,
                    "lastTransitionTime": now,
                }
            ],
        },
    )
