"""The kube client's own HTTP layer (``trainjob.kube.transport.Pool``, what the controller and the
CLI use against a real server), against a real HTTP/1.1 server on loopback: the request as sent,
keep-alive reuse, a request resent once when the server closed an idle connection, timeouts and
refusals as ``TransportError``, streamed lines (blank ones kept) and a stream unblocked from
another thread. The tests of ``test_client.py`` go through httpx's MockTransport (``Httpx``)."""

from __future__ import annotations

import contextlib
import http.server
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest

from trainjob.kube import Client, transport
from trainjob.kube.config import Config
from trainjob.kube.errors import NotFound, Timeout, Unreachable


@dataclass
class Seen:
    requests: list[tuple[str, str, list[tuple[str, str]], bytes]] = field(default_factory=list)
    # each connection's client address: an id() of a closed socket object may be reused
    connections: set[tuple[str, int]] = field(default_factory=set)


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    seen: Seen
    close_after_first: bool = False

    def log_message(self, format: str, *args: object) -> None:
        pass

    def _record(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        self.seen.requests.append((self.command, self.path, list(self.headers.items()), body))
        self.seen.connections.add(self.client_address[:2])
        return body

    def _answer(self, status: int, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            self.wfile.write(body)  # (the timeout test's client has gone by then)

    def do_GET(self) -> None:
        self._record()
        if self.path.startswith("/slow"):
            time.sleep(2)
        if self.path.startswith("/stream"):
            self.send_response(200)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for chunk in (b"one\n\nth", b"ree\n", b"four"):
                self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                self.wfile.flush()
            if self.path.startswith("/stream-forever"):
                time.sleep(30)  # a watch with nothing to say: the client must be able to end it
            self.wfile.write(b"0\r\n\r\n")
            return
        if self.path.startswith("/missing"):
            self._answer(
                404,
                b'{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound",'
                b'"message":"pods \\"x\\" not found","code":404}',
            )
            return
        self._answer(200, b'{"ok":true}')
        if type(self).close_after_first and len(self.seen.requests) == 1:
            # close the keep-alive connection without saying so (an apiserver's idle timeout)
            self.close_connection = True

    def do_POST(self) -> None:
        body = self._record()
        self._answer(201, body)


@pytest.fixture
def server(request: pytest.FixtureRequest) -> Iterator[tuple[str, Seen]]:
    seen = Seen()
    close_after_first = bool(getattr(request, "param", False))
    handler = type("H", (Handler,), {"seen": seen, "close_after_first": close_after_first})
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    srv.daemon_threads = True
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{srv.server_address[1]}", seen
    finally:
        srv.shutdown()
        srv.server_close()


def pool(url: str) -> transport.Pool:
    return transport.Pool(Config(server=url), max_connections=4, user_agent="trainjob-test")


def test_the_request_as_sent(server: tuple[str, Seen]) -> None:
    url, seen = server
    p = pool(url)
    headers = [("Impersonate-Group", "a"), ("Impersonate-Group", "b")]
    resp = p.request("POST", "/api/v1/x", {"dryRun": "All", "q": "a b"}, headers, b'{"k":1}', 5)
    assert (resp.status, resp.content) == (201, b'{"k":1}')
    method, path, sent, body = seen.requests[0]
    assert (method, path, body) == ("POST", "/api/v1/x?dryRun=All&q=a+b", b'{"k":1}')
    assert [v for k, v in sent if k == "Impersonate-Group"] == ["a", "b"]  # repeated, in order
    assert ("User-Agent", "trainjob-test") in sent
    p.close()


def test_keep_alive_reuses_one_connection(server: tuple[str, Seen]) -> None:
    url, seen = server
    p = pool(url)
    for _ in range(5):
        assert p.request("GET", "/ok", {}, [], None, 5).status == 200
    assert len(seen.requests) == 5
    assert len(seen.connections) == 1
    p.close()


@pytest.mark.parametrize("server", [True], indirect=True)
def test_a_closed_idle_connection_is_replaced_once(server: tuple[str, Seen]) -> None:
    url, seen = server
    p = pool(url)
    assert p.request("GET", "/ok", {}, [], None, 5).status == 200
    time.sleep(0.2)  # the server has closed that connection by now
    assert p.request("GET", "/ok", {}, [], None, 5).status == 200
    assert len(seen.requests) == 2
    assert len(seen.connections) == 2
    p.close()


def test_refused_and_timed_out_are_transport_errors(server: tuple[str, Seen]) -> None:
    url, _ = server
    with socket.socket() as s, pytest.raises(transport.TransportError) as refused:
        s.bind(("127.0.0.1", 0))  # bound, not listening: refused, and no other process takes it
        free = s.getsockname()[1]
        pool(f"http://127.0.0.1:{free}").request("GET", "/", {}, [], None, 5)
    assert not refused.value.timeout
    assert "refused" in str(refused.value).lower()
    with pytest.raises(transport.TransportError) as slow:
        pool(url).request("GET", "/slow", {}, [], None, 0.3)
    assert slow.value.timeout


def test_the_client_maps_answers_and_failures(server: tuple[str, Seen]) -> None:
    url, _ = server
    client = Client(Config(server=url), timeout=0.3, max_retries=0)
    with pytest.raises(NotFound, match='pods "x" not found'):
        client.request("GET", "/missing")
    with pytest.raises(Timeout):
        client.request("GET", "/slow")
    client.close()
    with socket.socket() as s, pytest.raises(Unreachable):
        s.bind(("127.0.0.1", 0))  # bound, not listening: refused, and no other process takes it
        free = s.getsockname()[1]
        Client(Config(server=f"http://127.0.0.1:{free}"), max_retries=0).request("GET", "/")


def test_a_stream_yields_every_line_blank_ones_too(server: tuple[str, Seen]) -> None:
    url, _ = server
    stream = pool(url).stream("GET", "/stream", {}, [], 5, 5)
    try:
        assert stream.status == 200
        assert list(stream.iter_lines()) == ["one", "", "three", "four"]
    finally:
        stream.close()


def test_shutdown_ends_a_blocked_read_from_another_thread(server: tuple[str, Seen]) -> None:
    url, _ = server
    stream = pool(url).stream("GET", "/stream-forever", {}, [], 5, None)
    got: list[str] = []
    ended = threading.Event()

    def read() -> None:
        # a shut-down socket may read as an error rather than the end
        with contextlib.suppress(transport.TransportError):
            for line in stream.iter_lines():
                got.append(line)
        ended.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    time.sleep(0.5)  # the reader has the first lines and now waits for more
    stream.shutdown()
    assert ended.wait(5), "the blocked read did not return after shutdown()"
    stream.close()
    assert got[:3] == ["one", "", "three"]
