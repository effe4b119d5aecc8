"""Small HTTP(S) servers in background threads: health probes, metrics, admission webhooks.

:func:`serve` starts a ``ThreadingHTTPServer`` whose routes map ``(method, path)`` to a function
``(body bytes) -> (status, content type, body bytes)``. With an ``ssl_context`` each connection is
wrapped in TLS in its own thread (a slow client's handshake never blocks the others), and the
context can be swapped later (certificate rotation) through :attr:`Server.ssl_context`.

Used by ``trainjob.controller.manager`` (``/healthz``, ``/readyz``, ``/metrics``) and
``trainjob.controller.webhooks`` (the admission paths).
"""

from __future__ import annotations

import logging
import socket
import ssl
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from trainjob.errors import ConfigError

log = logging.getLogger(__name__)

Response = tuple[int, str, bytes]
Route = Callable[[bytes], Response]

MAX_BODY = 8 * 1024 * 1024


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(
        self, address: tuple[str, int], routes: dict[tuple[str, str], Route], name: str
    ) -> None:
        self.routes = routes
        self.name = name
        self.ssl_context: ssl.SSLContext | None = None
        super().__init__(address, _Handler)

    @property
    def port(self) -> int:
        return int(self.server_address[1])

    def finish_request(self, request: Any, client_address: Any) -> None:
        ctx = self.ssl_context
        if ctx is not None:
            try:
                request.settimeout(10)
                request = ctx.wrap_socket(request, server_side=True)
                request.settimeout(None)
            except (OSError, ssl.SSLError) as e:
                log.debug("%s: TLS handshake with %s failed: %s", self.name, client_address, e)
                return
        super().finish_request(request, client_address)

    def stop(self) -> None:
        self.shutdown()
        self.server_close()


class _Handler(BaseHTTPRequestHandler):
    server: Server
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("%s: " + format, self.server.name, *args)

    def _handle(self, method: str) -> None:
        path = self.path.split("?", 1)[0]
        route = self.server.routes.get((method, path))
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY:
            self._reply(413, "text/plain", b"request body too large\n")
            return
        body = self.rfile.read(length) if length else b""
        if route is None:
            self._reply(404, "text/plain", b"not found\n")
            return
        try:
            status, ctype, out = route(body)
        except Exception:
            log.exception("%s: %s %s failed", self.server.name, method, path)
            status, ctype, out = 500, "text/plain", b"internal error\n"
        self._reply(status, ctype, out)

    def _reply(self, status: int, ctype: str, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        self._handle("GET")

    def do_POST(self) -> None:
        self._handle("POST")


def serve(
    host: str,
    port: int,
    routes: dict[tuple[str, str], Route],
    name: str,
    ssl_context: ssl.SSLContext | None = None,
) -> Server:
    """Bind ``host:port`` (port 0: any free port) and serve ``routes`` in a daemon thread.

    A port that cannot be bound (in use, not permitted) is a :class:`ConfigError` naming it."""
    family_host = host or "0.0.0.0"
    try:
        server = Server((family_host, port), routes, name)
    except OSError as e:
        raise ConfigError(
            f"cannot serve {name} on {family_host}:{port}: {e.strerror or e}"
        ) from None
    server.ssl_context = ssl_context
    thread = threading.Thread(target=server.serve_forever, name=f"http-{name}", daemon=True)
    thread.start()
    log.info("serving %s on %s:%d", name, family_host, server.port)
    return server


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nobody listens on right now (for tests and --*-port 0 reporting)."""
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])
