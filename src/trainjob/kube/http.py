"""Small HTTP(S) servers in background threads: health probes, metrics, admission webhooks.

:func:`serve` starts a :class:`Server` whose routes map ``(method, path)`` to a function
``(body bytes) -> (status, content type, body bytes)``. The webhook server is reachable by any
pod of a cluster, so a slow or hostile client must never delay a normal AdmissionReview nor grow
the process past its memory limit:

* connections are served by one asyncio loop (a stalled one costs a coroutine, not a thread);
  route functions run on a small pool of :data:`HANDLER_THREADS` threads, but routes declared
  ``inline`` (the admission webhooks: computation, from caches) on a small body, which run on
  the loop and move to a thread only when they must block (:func:`check_inline`): handing each
  request to a thread and back cost more than the handler under load;
* TLS is negotiated per connection with the current :attr:`Server.ssl_context` (it can be swapped
  for certificate rotation) within :data:`HANDSHAKE_TIMEOUT`; a request's head and body must then
  arrive within :data:`REQUEST_TIMEOUT` in all (a deadline, not a per-read timeout: one byte every
  few seconds does not keep it open); an idle kept-alive connection stays open (:data:`IDLE_TIMEOUT`)
  until its client closes it, its peer is found gone by TCP keep-alive probes, or the connection
  limit evicts it;
* a body needs a valid ``Content-Length`` of at most :data:`MAX_BODY` (negative, malformed or
  missing with a body: 400/411; chunked: 501; larger: 413; after a 413 or a 400 for the length,
  up to :data:`DRAIN_LIMIT` of the body is read and dropped, so that the client hears the answer
  rather than a reset connection); bodies over 64 KiB share a budget of :data:`BODY_BUDGET`
  bytes in flight (read into one buffer each, held until answered), so many large requests at
  once wait their turn;
* at most :data:`MAX_CONNECTIONS` connections are open; one more evicts the connection that has
  waited longest for its client, so stalled connections never lock a new one out.

A server may also take a ``handler`` for requests no route matches, given the whole
:class:`Request` (method, path, headers, body), and a smaller ``max_body``.

Used by ``trainjob.controller.manager`` (``/healthz``, ``/readyz``, ``/metrics``),
``trainjob.controller.webhooks`` (the admission paths) and ``trainjob.controller.statusserver``
(the TrainJob status endpoint: a handler, 64 KiB bodies).
"""

from __future__ import annotations

import asyncio
import asyncio.sslproto
import logging
import os
import socket
import ssl
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import cast

from trainjob.errors import ConfigError

log = logging.getLogger(__name__)

Response = tuple[int, str, bytes]
Route = Callable[[bytes], Response]


@dataclass(frozen=True)
class Request:
    """One request as a :data:`Handler` sees it (header names lower-case)."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes


Handler = Callable[[Request], Response]

MAX_BODY = 8 * 1024 * 1024
MAX_HEAD = 64 * 1024  # request line and headers
SMALL_BODY = 64 * 1024  # bodies up to this size skip the shared budget
BODY_BUDGET = 32 * 1024 * 1024
MAX_CONNECTIONS = 512
HANDLER_THREADS = 4
HANDSHAKE_TIMEOUT = 10.0
REQUEST_TIMEOUT = 10.0  # the apiserver gives a webhook call at most 10 s (timeoutSeconds)
IDLE_TIMEOUT: float | None = None
"""How long a kept-alive connection may wait for its next request: for ever, as
controller-runtime's webhook server (Go's ``http.Server`` without an ``IdleTimeout``). The
apiserver's webhook client keeps an idle connection for 90 s (client-go's transport: Go's
``IdleConnTimeout``) and sends the next review on it; a server that closed it sooner raced that
reuse, and the create was refused with ``failed calling webhook ...: EOF``. Idle connections cost
a coroutine each and are bounded by :data:`MAX_CONNECTIONS`; a vanished peer's is ended by
:data:`TCP_KEEPALIVE` probes."""
TCP_KEEPALIVE = 15
"""Seconds of silence before a connection's peer is probed, and between probes (Go's server's
default keep-alive period)."""
WRITE_TIMEOUT = 10.0
DRAIN_LIMIT = 1024 * 1024  # of a refused body, read and dropped before closing
DRAIN_TIMEOUT = 2.0
TLS_READ_BUFFER = 16 * 1024
"""Bytes asyncio's TLS layer reads from a socket at once (its default, 256 KiB, is allocated for
every connection: under a burst the apiserver holds dozens of webhook connections open, which
measured +8 MiB of peak RSS; requests here are a few KiB, and a TLS record is at most 16 KiB)."""


asyncio.sslproto.SSLProtocol.max_size = TLS_READ_BUFFER  # process-wide: only our servers use it


class WouldBlock(Exception):
    """Raised by an ``inline`` route that finds it needs I/O after all (:func:`check_inline`):
    the server runs it again from the start on a pool thread."""


_inline = threading.local()


def check_inline() -> None:
    """Raise :class:`WouldBlock` when called from a route running inline on the loop (call it
    before any blocking call: an apiserver request, a file)."""
    if getattr(_inline, "active", False):
        raise WouldBlock


class _Reject(Exception):
    """A request answered with an error status, after which the connection is closed.

    ``unread`` is the length of a body left unread (a 413, a 400 for the length): so that a client
    still sending it hears the answer instead of a reset connection, up to :data:`DRAIN_LIMIT` of
    it is read and dropped after the reply (a "lingering close", as nginx and Go's net/http do).
    """

    def __init__(self, status: int, message: str, unread: int = 0) -> None:
        super().__init__(message)
        self.status = status
        self.unread = unread


@dataclass(eq=False)
class _Conn:
    writer: asyncio.StreamWriter
    since: float = field(default_factory=time.monotonic)  # when it began waiting for its client
    waiting: bool = True  # reading from the client (evictable), not running a handler


class Server:
    """An HTTP/1.1 server on an asyncio loop in a daemon thread (see the module docstring)."""

    def __init__(
        self,
        sock: socket.socket,
        routes: dict[tuple[str, str], Route],
        name: str,
        ssl_context: ssl.SSLContext | None = None,
        handler: Handler | None = None,
        max_body: int = MAX_BODY,
        inline: frozenset[tuple[str, str]] = frozenset(),
        on_route: Callable[[], None] | None = None,
    ) -> None:
        self.routes = routes
        self.inline = inline
        self.on_route = on_route
        self.handler = handler
        self.max_body = max_body
        self.name = name
        self.ssl_context = ssl_context  # read per connection: may be swapped at any time
        self._sock = sock
        self._pool = ThreadPoolExecutor(HANDLER_THREADS, thread_name_prefix=f"http-{name}")
        self._loop = asyncio.new_event_loop()
        self._conns: set[_Conn] = set()
        self._budget = BODY_BUDGET
        self._budget_freed: asyncio.Condition | None = None
        self._server: asyncio.Server | None = None
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"http-{name}", daemon=True)
        self._thread.start()
        self._ready.wait()

    @property
    def port(self) -> int:
        return int(self._sock.getsockname()[1])

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)

        async def start() -> None:
            self._budget_freed = asyncio.Condition()
            self._server = await asyncio.start_server(
                self._connection, sock=self._sock, limit=MAX_HEAD
            )

        self._loop.run_until_complete(start())
        self._ready.set()
        self._loop.run_forever()

    def stop(self) -> None:
        """Close the listener and every connection; wait for the loop to end."""

        async def close() -> None:
            if self._server is not None:
                self._server.close()
            for conn in list(self._conns):
                conn.writer.close()
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        if self._loop.is_running():
            asyncio.run_coroutine_threadsafe(close(), self._loop).result(timeout=10)
            self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        self._loop.close()
        self._pool.shutdown(wait=False, cancel_futures=True)

    # -- connections -------------------------------------------------------------------------

    def _admit(self, conn: _Conn) -> None:
        """Track ``conn``; past the limit, close the one that has waited longest for its client."""
        if len(self._conns) >= MAX_CONNECTIONS:
            idle = [c for c in self._conns if c.waiting]
            if idle:
                oldest = min(idle, key=lambda c: c.since)
                log.debug(
                    "%s: %d connections open; closing the longest waiting",
                    self.name,
                    len(self._conns),
                )
                oldest.writer.close()
                self._conns.discard(oldest)
        self._conns.add(conn)

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        conn = _Conn(writer)
        self._admit(conn)
        _keepalive(writer.get_extra_info("socket"))
        peer = writer.get_extra_info("peername")
        try:
            ctx = self.ssl_context
            if ctx is not None:
                await writer.start_tls(ctx, ssl_handshake_timeout=HANDSHAKE_TIMEOUT)
            while await self._request(reader, writer, conn):
                pass
        except (OSError, ssl.SSLError, asyncio.IncompleteReadError, TimeoutError) as e:
            log.debug("%s: connection from %s ended: %s", self.name, peer, e or type(e).__name__)
        finally:
            self._conns.discard(conn)
            writer.close()
            try:
                await asyncio.wait_for(writer.wait_closed(), 1.0)
            except Exception:  # a client that keeps sending, or never closes its side: drop it
                writer.transport.abort()

    async def _request(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, conn: _Conn
    ) -> bool:
        """Serve one request; whether the connection stays open for another."""
        conn.waiting, conn.since = True, time.monotonic()
        try:
            async with asyncio.timeout(IDLE_TIMEOUT):  # (wait_for would make a task a request)
                first = await reader.read(1)
        except TimeoutError:
            return False
        if not first:
            return False
        try:
            async with asyncio.timeout(REQUEST_TIMEOUT):
                method, path, headers = await self._head(first, reader)
                body, reserved = await self._body(method, headers, reader, writer)
        except _Reject as e:
            await self._reply(writer, e.status, "text/plain", f"{e}\n".encode(), close=True)
            if e.unread:
                await _drain(reader, min(e.unread, DRAIN_LIMIT))
            return False
        except TimeoutError:
            log.debug(
                "%s: a request took over %.0fs to arrive; closing it", self.name, REQUEST_TIMEOUT
            )
            return False
        conn.waiting = False
        try:
            status, ctype, out = await self._handle(method, path, body, headers)
        finally:
            del body
            await self._release(reserved)
        keep = headers.get("connection", "").lower() != "close"
        await self._reply(writer, status, ctype, out, close=not keep)
        return keep

    async def _head(
        self, first: bytes, reader: asyncio.StreamReader
    ) -> tuple[str, str, dict[str, str]]:
        try:
            raw = first + await reader.readuntil(b"\r\n\r\n")
        except asyncio.LimitOverrunError:
            raise _Reject(431, "request headers too large") from None
        except asyncio.IncompleteReadError as e:
            raise _Reject(400, "incomplete request") from e
        lines = raw.decode("latin-1").split("\r\n")
        parts = lines[0].split(" ")
        if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
            raise _Reject(400, "malformed request line")
        headers: dict[str, str] = {}
        for line in lines[1:]:
            if not line:
                continue
            key, sep, value = line.partition(":")
            if not sep:
                raise _Reject(400, "malformed header")
            headers[key.strip().lower()] = value.strip()
        return parts[0], parts[1].split("?", 1)[0], headers

    async def _body(
        self,
        method: str,
        headers: dict[str, str],
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
    ) -> tuple[bytes, int]:
        """The body (and the budget reserved for it), read within the request's deadline."""
        if "transfer-encoding" in headers:
            raise _Reject(501, "chunked request bodies are not supported: send Content-Length")
        raw = headers.get("content-length")
        if raw is None:
            if method in ("POST", "PUT", "PATCH"):
                raise _Reject(411, "Content-Length required")
            return b"", 0
        if not raw.isdigit():  # negative, signed, or not a number
            # a body of unknown length may be on its way: linger as for a 413
            raise _Reject(400, f"invalid Content-Length {raw[:40]!r}", unread=DRAIN_LIMIT)
        length = int(raw)
        if length > self.max_body:
            raise _Reject(413, "request body too large", unread=length)
        if headers.get("expect", "").lower() == "100-continue":
            writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        reserved = await self._reserve(length)
        try:
            return await _read_exactly(reader, length), reserved
        except BaseException:
            await self._release(reserved)
            raise

    async def _reserve(self, length: int) -> int:
        """Take ``length`` bytes of the shared body budget (small bodies need none)."""
        if length <= SMALL_BODY:
            return 0
        assert self._budget_freed is not None
        async with self._budget_freed:
            await self._budget_freed.wait_for(lambda: self._budget >= length)
            self._budget -= length
        return length

    async def _release(self, reserved: int) -> None:
        if not reserved:
            return
        assert self._budget_freed is not None
        async with self._budget_freed:
            self._budget += reserved
            self._budget_freed.notify_all()

    async def _handle(
        self, method: str, path: str, body: bytes, headers: dict[str, str]
    ) -> Response:
        route = self.routes.get((method, path))
        call: Callable[[], Response]
        if route is not None and method in ("GET", "POST"):
            if self.on_route is not None:
                self.on_route()
            if (method, path) in self.inline and len(body) <= SMALL_BODY:
                # computation on a small body: no hand-over to a thread and back, unless
                # the route finds it must block (check_inline)
                _inline.active = True
                try:
                    return route(body)
                except WouldBlock:
                    pass
                except Exception:
                    log.exception("%s: %s %s failed", self.name, method, path)
                    return 500, "text/plain", b"internal error\n"
                finally:
                    _inline.active = False
            call = lambda: route(body)  # noqa: E731
        elif self.handler is not None:
            handler, request = self.handler, Request(method, path, headers, body)
            call = lambda: handler(request)  # noqa: E731
        elif method not in ("GET", "POST"):
            return 501, "text/plain", b"unsupported method\n"
        else:
            return 404, "text/plain", b"not found\n"
        try:
            return await self._loop.run_in_executor(self._pool, call)
        except Exception:
            log.exception("%s: %s %s failed", self.name, method, path)
            return 500, "text/plain", b"internal error\n"

    async def _reply(
        self, writer: asyncio.StreamWriter, status: int, ctype: str, body: bytes, *, close: bool
    ) -> None:
        try:
            reason = HTTPStatus(status).phrase
        except ValueError:
            reason = ""
        head = [
            f"HTTP/1.1 {status} {reason}",
            f"Content-Type: {ctype}",
            f"Content-Length: {len(body)}",
        ]
        if close:
            head.append("Connection: close")
        writer.write("\r\n".join([*head, "", ""]).encode("latin-1") + body)
        async with asyncio.timeout(WRITE_TIMEOUT):
            await writer.drain()


async def _read_exactly(reader: asyncio.StreamReader, length: int) -> bytes:
    """``length`` bytes into one buffer (``readexactly`` would hold a second copy)."""
    buf = bytearray(length)
    view, filled = memoryview(buf), 0
    while filled < length:
        chunk = await reader.read(min(1 << 16, length - filled))
        if not chunk:
            raise asyncio.IncompleteReadError(bytes(view[:filled]), length)
        view[filled : filled + len(chunk)] = chunk
        filled += len(chunk)
    return cast(bytes, buf)  # a bytearray, read as bytes by json.loads and the routes


async def _drain(reader: asyncio.StreamReader, length: int) -> None:
    """Read and drop up to ``length`` bytes within :data:`DRAIN_TIMEOUT` (then close anyway)."""
    try:
        async with asyncio.timeout(DRAIN_TIMEOUT):
            while length > 0:
                chunk = await reader.read(min(1 << 16, length))
                if not chunk:
                    return
                length -= len(chunk)
    except TimeoutError:
        return


def _keepalive(sock: socket.socket | None) -> None:
    """Probe an idle connection's peer every :data:`TCP_KEEPALIVE` s (a node gone without a FIN
    would otherwise hold an idle connection for ever)."""
    if sock is None or sock.family not in (socket.AF_INET, socket.AF_INET6):
        return
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
        for opt in ("TCP_KEEPIDLE", "TCP_KEEPINTVL"):
            if hasattr(socket, opt):
                sock.setsockopt(socket.IPPROTO_TCP, getattr(socket, opt), TCP_KEEPALIVE)
        if hasattr(socket, "TCP_KEEPCNT"):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPCNT, 9)
    except OSError as e:  # a socket already reset by its peer
        log.debug("setting TCP keep-alive: %s", e)


def serve(
    host: str,
    port: int,
    routes: dict[tuple[str, str], Route],
    name: str,
    ssl_context: ssl.SSLContext | None = None,
    *,
    handler: Handler | None = None,
    max_body: int = MAX_BODY,
    inline: frozenset[tuple[str, str]] = frozenset(),
    on_route: Callable[[], None] | None = None,
) -> Server:
    """Bind ``host:port`` (port 0: any free port) and serve ``routes`` in a daemon thread.

    ``inline`` routes are computation that calls :func:`check_inline` before anything that
    may block: on a body of at most :data:`SMALL_BODY` they run on the loop itself, and again
    on a pool thread when they raise :class:`WouldBlock`. ``on_route`` is called on the loop as
    each request for a route is handled (the webhooks tell :mod:`trainjob.controller.priority`).

    A port that cannot be bound (in use, not permitted) is a :class:`ConfigError` naming it."""
    family_host = host or "0.0.0.0"
    family = socket.AF_INET6 if ":" in family_host else socket.AF_INET
    try:
        sock = socket.create_server((family_host, port), family=family, backlog=1024)
    except OSError as e:
        why = os.strerror(e.errno) if e.errno else str(e)
        raise ConfigError(f"cannot serve {name} on {family_host}:{port}: {why}") from None
    server = Server(sock, routes, name, ssl_context, handler, max_body, inline, on_route)
    log.info("serving %s on %s:%d", name, family_host, server.port)
    return server
