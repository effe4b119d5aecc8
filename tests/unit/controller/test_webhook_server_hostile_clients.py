"""The webhook server against hostile and broken clients, on loopback, over TLS (issue 11, class 9).

The server (tests/unit/controller/webhook_server.py: trainjob's real admission routes and HTTP
server, in a process of its own so that its memory can be read) is attacked with bodies over the
8 MiB cap, a negative or malformed Content-Length, connections that stall in the TLS handshake,
in the headers or in the body, and many large bodies at once. Meanwhile a normal AdmissionReview
must be answered within the webhook's timeout (``timeoutSeconds: 10``), stalled connections must
be closed by the server's read deadline (2 s here), and the server's RSS must stay bounded.
"""

from __future__ import annotations

import contextlib
import json
import socket
import ssl
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from trainjob.controller.webhooks.admission import PATH_VALIDATE_CLUSTER_TRAINING_RUNTIME as PATH
from trainjob.executor import catalog

ROOT = Path(__file__).resolve().parents[3]
WEBHOOK_TIMEOUT = 10.0  # the apiserver's timeoutSeconds for trainjob's webhooks
DEADLINE = 2.0  # REQUEST_TIMEOUT and HANDSHAKE_TIMEOUT of the server under test


class Target:
    def __init__(self, proc: subprocess.Popen[str], port: int, ca: Path) -> None:
        self.proc, self.port = proc, port
        self.ctx = ssl.create_default_context(cafile=str(ca))

    def rss(self) -> int:
        """The server's resident memory, bytes."""
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
        raise AssertionError("no VmRSS")

    def tls(self) -> ssl.SSLSocket:
        raw = socket.create_connection(("127.0.0.1", self.port), timeout=30)
        return self.ctx.wrap_socket(raw, server_hostname="localhost")

    def review(self, runtime: dict[str, Any]) -> tuple[int, dict[str, Any], float]:
        body = {
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "request": {"uid": "u-1", "operation": "CREATE", "object": runtime},
        }
        start = time.monotonic()
        with httpx.Client(verify=self.ctx, timeout=WEBHOOK_TIMEOUT) as client:
            resp = client.post(f"https://localhost:{self.port}{PATH}", json=body)
        took = time.monotonic() - start
        return resp.status_code, resp.json()["response"], took


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    out = tmp_path_factory.mktemp("webhook")
    env = {
        "REQUEST_TIMEOUT": str(DEADLINE),
        "HANDSHAKE_TIMEOUT": str(DEADLINE),
        "PATH": "/usr/bin:/bin",
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.unit.controller.webhook_server", str(out)],
        cwd=ROOT,
        env={**env, "PYTHONPATH": f"{ROOT}:{ROOT / 'src'}"},
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("PORT "), line
        yield Target(proc, int(line.split()[1]), out / "ca.crt")
    finally:
        proc.kill()
        proc.wait()


def runtime(name: str = "torch-distributed") -> dict[str, Any]:
    return catalog.builtin_runtimes()["torch-distributed"].to_dict() | {"metadata": {"name": name}}


def _response(sock: ssl.SSLSocket) -> bytes:
    sock.settimeout(30)
    data = b""
    with contextlib.suppress(OSError):
        while chunk := sock.recv(65536):
            data += chunk
    return data


def _raw(server: Target, head: str, body: bytes = b"") -> bytes:
    """Send a request head (and body) on a fresh TLS connection; what the server answers."""
    with server.tls() as s:
        with contextlib.suppress(OSError):
            s.sendall(head.encode() + b"\r\n\r\n" + body)
        return _response(s)


def _post_head(length: str) -> str:
    return (
        f"POST {PATH} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n"
        f"Content-Type: application/json\r\nContent-Length: {length}"
    )


def test_a_normal_review_is_allowed_or_denied(server: Target) -> None:
    code, response, _ = server.review(runtime())
    assert (code, response["allowed"], response["uid"]) == (200, True, "u-1")
    bad = runtime()
    bad["spec"]["mlPolicy"]["numNodes"] = -3
    code, response, _ = server.review(bad)
    assert (code, response["allowed"]) == (200, False)
    assert "spec.mlPolicy.numNodes: Invalid value: -3" in response["status"]["message"]


@pytest.mark.parametrize(
    ("length", "status"),
    [
        pytest.param(str(9 * 1024 * 1024), b"413", id="over the 8 MiB cap, refused unread"),
        pytest.param("-1", b"400", id="negative"),
        pytest.param("+5", b"400", id="signed"),
        pytest.param("12abc", b"400", id="not a number"),
        pytest.param("", b"400", id="empty"),
    ],
)
def test_a_bad_content_length_is_refused_at_once(
    server: Target, length: str, status: bytes
) -> None:
    answer = _raw(server, _post_head(length))
    assert answer.startswith(b"HTTP/1.1 " + status), answer[:200]
    assert b"Connection: close" in answer


def test_a_body_without_content_length_or_chunked_is_refused(server: Target) -> None:
    head = f"POST {PATH} HTTP/1.1\r\nHost: localhost"
    assert _raw(server, head).startswith(b"HTTP/1.1 411")
    chunked = _raw(server, head + "\r\nTransfer-Encoding: chunked", b"5\r\nhello\r\n0\r\n\r\n")
    assert chunked.startswith(b"HTTP/1.1 501")


def test_a_body_that_is_not_an_admission_review_is_a_400_not_a_traceback(server: Target) -> None:
    for body in (b"not json", b"[1, 2]", b'{"request": 5}'):
        answer = _raw(server, _post_head(str(len(body))), body)
        assert answer.startswith(b"HTTP/1.1 400"), (body, answer[:200])


def test_a_negative_length_stream_of_300_mib_is_cut_off_with_memory_flat(server: Target) -> None:
    before = server.rss()
    sent = 0
    with server.tls() as s:
        s.sendall(_post_head("-1").encode() + b"\r\n\r\n")
        chunk = b"x" * (1 << 20)
        with contextlib.suppress(OSError):
            for _ in range(300):
                s.sendall(chunk)
                sent += len(chunk)
        answer = _response(s)
    assert answer.startswith(b"HTTP/1.1 400")
    assert sent < 300 * (1 << 20), "the server read the whole stream instead of closing"
    assert server.rss() - before < 32 * 1024 * 1024


def test_stalled_clients_never_delay_a_normal_review(server: Target) -> None:
    stalled: list[socket.socket] = []
    try:
        for _ in range(20):  # TCP only: never start the TLS handshake
            stalled.append(socket.create_connection(("127.0.0.1", server.port)))
        for i in range(150):
            s = server.tls()
            if i % 3 == 0:  # half a head
                s.sendall(f"POST {PATH} HTTP/1.1\r\nHost: localhost\r\n".encode())
            elif i % 3 == 1:  # a body shorter than its Content-Length
                s.sendall(_post_head("1000").encode() + b'\r\n\r\n{"short":')
            else:  # a slowloris: one byte now, more later
                s.sendall(b"P")
            stalled.append(s)
        took = []
        for _ in range(5):
            code, response, seconds = server.review(runtime())
            assert (code, response["allowed"]) == (200, True)
            took.append(seconds)
        assert max(took) < WEBHOOK_TIMEOUT, took
        # Past the read deadline the server has closed every stalled connection.
        time.sleep(DEADLINE + 1.5)
        for conn in stalled:
            conn.settimeout(5)
            try:
                rest = conn.recv(65536)
            except (OSError, ssl.SSLError):
                continue  # reset, or TLS torn down: closed
            assert rest == b"" or rest.startswith(b"HTTP/1.1 4"), rest[:100]
    finally:
        for conn in stalled:
            conn.close()


def test_many_large_bodies_at_once_keep_the_server_s_memory_bounded(server: Target) -> None:
    """16 clients send an 8 MiB body each at once (128 MiB): bodies in flight share a 64 MiB
    budget, so the server's memory grows by a bounded amount; each is answered (400: not JSON)
    or, still waiting for the budget at its deadline, closed; a normal review then passes."""
    before = server.rss()
    peak = [before]
    done = threading.Event()

    def watch() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], server.rss())
            time.sleep(0.02)

    answers: list[bytes] = []

    def send() -> None:
        body = b"x" * (8 * 1024 * 1024)
        answers.append(_raw(server, _post_head(str(len(body))), body))

    watcher = threading.Thread(target=watch)
    watcher.start()
    senders = [threading.Thread(target=send) for _ in range(16)]
    for t in senders:
        t.start()
    for t in senders:
        t.join(timeout=120)
    done.set()
    watcher.join()
    assert len(answers) == 16 and all(a == b"" or a.startswith(b"HTTP/1.1 400") for a in answers)
    assert any(answers), "no large body was answered"
    assert peak[0] - before < 100 * 1024 * 1024, f"RSS grew by {(peak[0] - before) >> 20} MiB"
    code, response, _ = server.review(runtime())
    assert (code, response["allowed"]) == (200, True)


def test_keep_alive_serves_several_reviews_on_one_connection(server: Target) -> None:
    body = json.dumps(
        {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
         "request": {"uid": "k", "operation": "CREATE", "object": runtime()}}
    ).encode()  # fmt: skip
    with httpx.Client(verify=server.ctx, timeout=WEBHOOK_TIMEOUT) as client:
        for _ in range(3):
            resp = client.post(f"https://localhost:{server.port}{PATH}", content=body)
            assert resp.status_code == 200 and resp.json()["response"]["allowed"] is True
