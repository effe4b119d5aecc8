"""The HTTP layer under :class:`trainjob.kube.client.Client`: requests, and streams for watches
and logs, with keep-alive connections.

Two implementations of the same three calls (``request``, ``stream``, ``close``):

* :class:`Pool`, the default: ``http.client`` connections to the one apiserver, kept alive and
  reused (at most ``max_connections`` requests at once; each watch or log stream has a
  connection of its own), TLS from the kubeconfig (its CA, client certificate, ``tls-server-name``).
  A request costs about a third of httpx's CPU (measured: 0.44 against 1.54 ms a GET), which
  the controller pays thousands of times in a burst, and the process does not import httpx.
* :class:`Httpx`: httpx, when a test hands the client an httpx transport (``MockTransport``), or
  when a proxy is set for the server in the environment (``HTTPS_PROXY``/``HTTP_PROXY``/
  ``ALL_PROXY``, minus ``NO_PROXY``), which httpx honours as client-go does.

Why both, not one: :class:`Pool` is the one the controller and the CLI run (its CPU cost is the
reason it exists), but it speaks only to the apiserver directly; proxying (``CONNECT``
tunnels, proxy credentials, ``NO_PROXY`` matching) is what httpx, already a dependency of the
package, does correctly, and a second hand-written proxy client would be copied logic. The
unit tests' fake apiservers are httpx ``MockTransport`` handlers, which need no socket. So
:class:`Httpx` stays as the narrow fallback, behind the same :class:`Http` protocol, and
``for_config`` is the only place that picks between them.

Failures to reach the server raise :class:`TransportError` (``timeout`` says whether it was a
timeout); the client turns them into ``Unreachable``/``Timeout``. A request that fails on a
reused keep-alive connection before any answer came (the server closed it while idle) is sent
once more on a fresh connection, as Go's transport does.
"""

from __future__ import annotations

import contextlib
import http.client
import select
import socket
import ssl
import threading
import urllib.parse
import urllib.request
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import httpx

    from trainjob.kube.config import Config

Headers = list[tuple[str, str]]


class TransportError(Exception):
    """No HTTP answer: connection refused or reset, TLS failure, or (``timeout``) none in time."""

    def __init__(self, message: str, *, timeout: bool = False) -> None:
        super().__init__(message)
        self.timeout = timeout


class HeaderMap(Protocol):
    def get(self, name: str, default: Any = None) -> Any: ...


@dataclass
class Response:
    status: int
    headers: HeaderMap
    content: bytes


class Stream(Protocol):
    """An answer read as it comes (a watch, a followed log)."""

    status: int

    def read(self) -> bytes: ...
    def iter_lines(self) -> Iterator[str]:
        """The answer's lines without their line ends, blank ones included."""

    def shutdown(self) -> None:
        """Unblock a read in another thread now (shuts the socket down)."""

    def close(self) -> None: ...


class Http(Protocol):
    def request(
        self,
        method: str,
        path: str,
        params: Mapping[str, str],
        headers: Headers,
        content: bytes | None,
        timeout: float,
    ) -> Response: ...

    def stream(
        self,
        method: str,
        path: str,
        params: Mapping[str, str],
        headers: Headers,
        timeout: float,
        read_timeout: float | None,
    ) -> Stream: ...

    def close(self) -> None: ...


def for_config(
    config: Config,
    *,
    max_connections: int,
    user_agent: str,
    timeout: float,
    transport: httpx.BaseTransport | None = None,
) -> Http:
    """:class:`Pool`, or :class:`Httpx` for a given httpx transport or a proxied server."""
    if transport is not None or proxied(config.server):
        return Httpx(config, max_connections, user_agent, timeout, transport)
    return Pool(config, max_connections, user_agent)


def proxied(server: str) -> bool:
    """A proxy is set for ``server`` in the environment (and NO_PROXY does not exclude it)."""
    u = urllib.parse.urlsplit(server)
    proxies = urllib.request.getproxies_environment()
    if not (proxies.get(u.scheme) or proxies.get("all")):
        return False
    return not urllib.request.proxy_bypass(u.hostname or "")


def _describe(e: BaseException) -> str:
    """An error's words as httpx gave them (``[Errno 111] Connection refused``), else its kind."""
    return str(e) or type(e).__name__


def _url(base: str, path: str, params: Mapping[str, str]) -> str:
    return base + path + ("?" + urllib.parse.urlencode(params) if params else "")


# -- http.client -----------------------------------------------------------------------------------
class _HTTPSConnection(http.client.HTTPSConnection):
    """TLS with a server name of our choosing (kubeconfig's ``tls-server-name``)."""

    def __init__(self, host: str, port: int | None, server_name: str, **kw: Any) -> None:
        super().__init__(host, port, **kw)
        self._server_name = server_name

    def connect(self) -> None:
        http.client.HTTPConnection.connect(self)
        self.sock = self._context.wrap_socket(  # type: ignore[attr-defined]
            self.sock, server_hostname=self._server_name
        )


# What a request on a keep-alive connection the server has closed meets (a plain socket, or TLS:
# an apiserver restarted meanwhile closes it without a close_notify: SSLEOFError on the write).
_STALE = (
    http.client.RemoteDisconnected,
    ConnectionResetError,
    ConnectionAbortedError,
    BrokenPipeError,
    ssl.SSLEOFError,
    ssl.SSLZeroReturnError,
)


@contextlib.contextmanager
def _failures_closing(conn: http.client.HTTPConnection, timeout: float) -> Iterator[None]:
    """An exchange on ``conn`` that fails closes it and is a TransportError (a timeout one that
    says how long it waited): one rule for every request and stream of the pool."""
    try:
        yield
    except TimeoutError as e:
        conn.close()
        raise TransportError(f"timed out after {timeout:g}s", timeout=True) from e
    except (OSError, http.client.HTTPException) as e:
        conn.close()
        raise TransportError(_describe(e)) from e


def _closed_by_peer(conn: http.client.HTTPConnection) -> bool:
    """An idle connection that reads as readable has been closed by the server (or holds bytes
    nobody asked for): never reuse it (httpcore checks the same before reusing one)."""
    sock = conn.sock
    if sock is None:
        return True
    try:
        readable, _, _ = select.select([sock], [], [], 0)
    except (OSError, ValueError):
        return True
    return bool(readable)


_BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})


class Pool:
    """Keep-alive ``http.client`` connections to one server (see the module docstring)."""

    def __init__(self, config: Config, max_connections: int, user_agent: str) -> None:
        u = urllib.parse.urlsplit(config.server)
        if u.scheme not in ("http", "https") or not u.hostname:
            raise ValueError(f"unsupported server URL {config.server!r}")
        self.https = u.scheme == "https"
        self.host = u.hostname
        self.port = u.port
        self.base = u.path.rstrip("/")
        self.server_name = config.tls_server_name or self.host
        self.context = config.ssl_context() if self.https else None
        self.user_agent = user_agent
        self._idle: list[http.client.HTTPConnection] = []
        self._lock = threading.Lock()
        self._slots = threading.BoundedSemaphore(max(1, max_connections))
        self._closed = False

    def _connect(self, timeout: float | None) -> http.client.HTTPConnection:
        if self.https:
            return _HTTPSConnection(
                self.host, self.port, self.server_name, timeout=timeout, context=self.context
            )
        return http.client.HTTPConnection(self.host, self.port, timeout=timeout)

    def _send(
        self,
        conn: http.client.HTTPConnection,
        method: str,
        url: str,
        headers: Headers,
        content: bytes | None,
    ) -> None:
        """Send the request line, the headers as given (a name may repeat: ``Impersonate-Group``
        does, so they are never a dict) and the body."""
        conn.putrequest(method, url)
        conn.putheader("User-Agent", self.user_agent)
        for name, value in headers:
            conn.putheader(name, value)
        if content is not None or method in _BODY_METHODS:
            conn.putheader("Content-Length", str(len(content or b"")))
        conn.endheaders(content)

    def _idle_connection(self) -> http.client.HTTPConnection | None:
        """A kept-alive connection the server has not closed meanwhile, if there is one."""
        while True:
            with self._lock:
                if not self._idle:
                    return None
                conn = self._idle.pop()
            if not _closed_by_peer(conn):
                return conn
            conn.close()

    def request(
        self,
        method: str,
        path: str,
        params: Mapping[str, str],
        headers: Headers,
        content: bytes | None,
        timeout: float,
    ) -> Response:
        url = _url(self.base, path, params)
        with self._slots:
            for attempt in (0, 1):
                conn = self._idle_connection()
                reused = conn is not None
                if conn is None:
                    conn = self._connect(timeout)
                elif conn.sock is not None:
                    conn.sock.settimeout(timeout)
                with _failures_closing(conn, timeout):
                    try:
                        self._send(conn, method, url, headers, content)
                        resp = conn.getresponse()
                        data = resp.read()
                    except _STALE:
                        if reused and attempt == 0:
                            conn.close()
                            continue  # the server closed the idle connection: once more, fresh
                        raise
                if resp.will_close or self._closed:
                    conn.close()
                else:
                    with self._lock:
                        self._idle.append(conn)
                return Response(resp.status, resp.headers, data)
        raise AssertionError("unreachable")  # pragma: no cover

    def stream(
        self,
        method: str,
        path: str,
        params: Mapping[str, str],
        headers: Headers,
        timeout: float,
        read_timeout: float | None,
    ) -> Stream:
        conn = self._connect(timeout)
        with _failures_closing(conn, timeout):
            self._send(conn, method, _url(self.base, path, params), headers, None)
            resp = conn.getresponse()
        if conn.sock is not None:
            conn.sock.settimeout(read_timeout)
        return _PoolStream(conn, resp)

    def close(self) -> None:
        self._closed = True
        with self._lock:
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()


class _PoolStream:
    def __init__(self, conn: http.client.HTTPConnection, resp: http.client.HTTPResponse) -> None:
        self.conn, self.resp = conn, resp
        self.status = resp.status
        self.headers = resp.headers
        self._sock = conn.sock

    def read(self) -> bytes:
        try:
            return self.resp.read()
        except (OSError, http.client.HTTPException) as e:
            raise TransportError(_describe(e)) from e

    def iter_lines(self) -> Iterator[str]:
        try:
            while True:
                line = self.resp.readline()
                if not line:
                    return
                # every line, blank ones too (a pod's log keeps them; a watch skips them)
                yield line.decode("utf-8", "replace").rstrip("\r\n")
        except TimeoutError as e:
            raise TransportError("timed out reading the stream", timeout=True) from e
        except (OSError, ValueError, AttributeError, http.client.HTTPException) as e:
            # (AttributeError: http.client's reader when the socket was shut down under it)
            raise TransportError(_describe(e)) from e

    def shutdown(self) -> None:
        if self._sock is not None:
            with contextlib.suppress(OSError):
                self._sock.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.resp.close()
        with contextlib.suppress(Exception):
            self.conn.close()


# -- httpx -----------------------------------------------------------------------------------------
class Httpx:
    """httpx (a test's transport, or a proxy from the environment)."""

    def __init__(
        self,
        config: Config,
        max_connections: int,
        user_agent: str,
        timeout: float,
        transport: httpx.BaseTransport | None,
    ) -> None:
        import httpx

        self._httpx = httpx
        verify: Any = True if transport is not None else config.ssl_context()
        self._http = httpx.Client(
            base_url=config.server,
            verify=verify,
            transport=transport,
            timeout=timeout,
            limits=httpx.Limits(
                max_connections=max_connections, max_keepalive_connections=max_connections
            ),
            headers={"User-Agent": user_agent},
        )
        self._extensions = (
            {"sni_hostname": config.tls_server_name} if config.tls_server_name else None
        )

    def request(
        self,
        method: str,
        path: str,
        params: Mapping[str, str],
        headers: Headers,
        content: bytes | None,
        timeout: float,
    ) -> Response:
        try:
            resp = self._http.request(
                method,
                path,
                params=dict(params),
                content=content,
                headers=headers,
                timeout=timeout,
                extensions=self._extensions,
            )
        except self._httpx.TransportError as e:
            raise _from_httpx(self._httpx, e) from e
        return Response(resp.status_code, resp.headers, resp.content)

    def stream(
        self,
        method: str,
        path: str,
        params: Mapping[str, str],
        headers: Headers,
        timeout: float,
        read_timeout: float | None,
    ) -> Stream:
        httpx = self._httpx
        req = self._http.build_request(
            method,
            path,
            params=dict(params),
            headers=headers,
            timeout=httpx.Timeout(timeout, read=read_timeout),
            extensions=self._extensions,
        )
        try:
            resp = self._http.send(req, stream=True)
        except httpx.TransportError as e:
            raise _from_httpx(httpx, e) from e
        return _HttpxStream(httpx, resp)

    def close(self) -> None:
        self._http.close()


def _from_httpx(httpx: Any, e: BaseException) -> TransportError:
    """An httpx failure as a TransportError (a timeout one when httpx timed out)."""
    return TransportError(str(e) or type(e).__name__, timeout=isinstance(e, httpx.TimeoutException))


class _HttpxStream:
    def __init__(self, httpx: Any, resp: Any) -> None:
        self._httpx, self.resp = httpx, resp
        self.status = resp.status_code
        self.headers = resp.headers

    def read(self) -> bytes:
        try:
            return bytes(self.resp.read())
        except self._httpx.HTTPError as e:
            raise TransportError(str(e) or type(e).__name__) from e

    def iter_lines(self) -> Iterator[str]:
        try:
            yield from self.resp.iter_lines()
        except (self._httpx.HTTPError, RuntimeError, OSError) as e:
            raise _from_httpx(self._httpx, e) from e

    def shutdown(self) -> None:
        # A blocked read only returns once the socket is shut down; closing the response from
        # another thread is not enough.
        stream = self.resp.extensions.get("network_stream")
        sock = stream.get_extra_info("socket") if stream is not None else None
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.resp.close()
