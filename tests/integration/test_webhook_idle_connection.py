"""A kept-alive webhook connection left idle as long as the apiserver leaves one still answers.

The apiserver's webhook client (client-go's transport: ``utilnet.SetTransportDefaults``, so Go's
``http.DefaultTransport`` ``IdleConnTimeout`` of 90 s) keeps an idle HTTP/1.1 connection to a
webhook for up to 90 s and sends the next AdmissionReview on it. A server that closes an idle
connection sooner races that reuse, and the apiserver refuses the create with ``failed calling
webhook ...: EOF``: the first create after a minute of quiet failed so while trainjob's server
closed idle connections after 60 s. controller-runtime's webhook server (Go's ``http.Server``
without an ``IdleTimeout``) never closes one; nor does trainjob's now.

Here one TLS connection is used as the apiserver uses it: an AdmissionReview, 95 s of silence
(past the old 60 s and the apiserver's own 90 s), then another on the same socket, which must be
answered. It needs no apiserver (the real server and routes, in this process), but it waits for
95 s, so it lives in the integration tier, which runs beside other work.
"""

from __future__ import annotations

import json
import socket
import ssl
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from trainjob.controller.webhooks.admission import PATH_VALIDATE_CLUSTER_TRAINING_RUNTIME as PATH
from trainjob.controller.webhooks.serving import Options, WebhookServer
from trainjob.executor import catalog
from trainjob.kube import certs, http

APISERVER_IDLE = 90.0  # Go's http.DefaultTransport IdleConnTimeout, which client-go keeps
IDLE = 95.0


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[http.Server, ssl.SSLContext]]:
    bundle = certs.generate(["localhost"], ["127.0.0.1"])
    (tmp_path / "ca.crt").write_bytes(bundle.ca_cert)
    client: Any = None  # a runtime review never calls the cluster
    hooks = WebhookServer(client, Options(mode="certdir"))
    srv = http.serve(
        "127.0.0.1",
        0,
        hooks.routes(),
        "webhooks",
        certs.server_context(bundle.cert, bundle.key),
        inline=hooks.inline_routes(),
    )
    try:
        yield srv, ssl.create_default_context(cafile=str(tmp_path / "ca.crt"))
    finally:
        srv.stop()


def _review(sock: ssl.SSLSocket, uid: str) -> dict[str, Any]:
    """One AdmissionReview on ``sock`` with keep-alive, as the apiserver sends it; the answer."""
    runtime = catalog.builtin_runtimes()["torch-distributed"]
    body = json.dumps(
        {
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "request": {
                "uid": uid,
                "operation": "CREATE",
                "object": runtime.model_dump(by_alias=True, exclude_none=True, mode="json"),
            },
        }
    ).encode()
    head = (
        f"POST {PATH}?timeout=10s HTTP/1.1\r\nHost: localhost\r\n"
        "Content-Type: application/json\r\nAccept: application/json, */*\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode()
    sock.sendall(head + body)
    raw = b""
    while b"\r\n\r\n" not in raw:
        chunk = sock.recv(65536)
        assert chunk, f"the server closed the connection instead of answering review {uid}"
        raw += chunk
    head_bytes, _, rest = raw.partition(b"\r\n\r\n")
    lines = head_bytes.decode("latin-1").split("\r\n")
    assert lines[0].startswith("HTTP/1.1 200"), lines[0]
    length = next(
        int(v)
        for k, _, v in (ln.partition(":") for ln in lines[1:])
        if k.lower() == "content-length"
    )
    while len(rest) < length:
        chunk = sock.recv(65536)
        assert chunk, "the server closed the connection mid-answer"
        rest += chunk
    review: dict[str, Any] = json.loads(rest[:length])
    return review


def test_a_connection_idle_past_the_apiservers_idle_timeout_is_still_served(
    server: tuple[http.Server, ssl.SSLContext],
) -> None:
    assert IDLE > APISERVER_IDLE
    srv, ctx = server
    raw = socket.create_connection(("127.0.0.1", srv.port), timeout=30)
    with ctx.wrap_socket(raw, server_hostname="localhost") as sock:
        first = _review(sock, "u-1")
        assert first["response"] == {"uid": "u-1", "allowed": True}
        time.sleep(IDLE)
        second = _review(sock, "u-2")  # the same socket: no reconnect in between
        assert second["response"] == {"uid": "u-2", "allowed": True}
