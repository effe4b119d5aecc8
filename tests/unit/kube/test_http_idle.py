"""An idle kept-alive connection outlives the apiserver's idle timeout for it (issue 28; on ``trainjob.kube.http``).

The apiserver's webhook client keeps an idle connection 90 s (Go's ``IdleConnTimeout``, kept
by client-go) and reuses it; the server must not close one sooner. The call on a connection
really left idle is ``tests/integration/test_webhook_idle_connection.py``.
"""

from __future__ import annotations

import socket
import time

from trainjob.kube import http

APISERVER_IDLE_CONN_TIMEOUT = 90.0


def test_the_servers_idle_timeout_is_longer_than_the_apiservers() -> None:
    assert http.IDLE_TIMEOUT is None or http.IDLE_TIMEOUT > APISERVER_IDLE_CONN_TIMEOUT


def test_a_connection_is_probed_by_tcp_keepalive() -> None:
    """An idle connection kept for ever must still end when its peer vanishes without a FIN."""
    server = http.serve("127.0.0.1", 0, {("GET", "/ok"): lambda _: (200, "text/plain", b"ok")}, "t")
    try:
        with socket.create_connection(("127.0.0.1", server.port), timeout=10) as client:
            client.sendall(b"GET /ok HTTP/1.1\r\nHost: x\r\n\r\n")
            assert client.recv(1024).startswith(b"HTTP/1.1 200")
            deadline = time.monotonic() + 5
            found = False
            while time.monotonic() < deadline and not found:
                found = any(
                    c.writer.get_extra_info("socket").getsockopt(
                        socket.SOL_SOCKET, socket.SO_KEEPALIVE
                    )
                    for c in list(server._conns)
                )
                time.sleep(0.05)
            assert found, "the server's side of the connection has no SO_KEEPALIVE"
    finally:
        server.stop()
