"""The controller's status endpoint serves a certificate valid where pods reach it: the webhook
server's when ``--status-server-url`` names the service (or none is given), its own, with the
URL's host in it, when pods reach it elsewhere (the real node's finding: a controller outside
the cluster, pods at this machine's bridge address, every report refused with "IP address
mismatch")."""

from __future__ import annotations

import socket
import ssl
from pathlib import Path
from typing import Any, cast

import pytest

from trainjob.controller import statusserver
from trainjob.kube import certs
from trainjob.kube.client import Client


def handshake(port: int, ca: bytes, host: str, tmp: Path) -> None:
    """A TLS handshake with the server on loopback, checked against ``ca`` for ``host``."""
    (tmp / "ca.crt").write_bytes(ca)
    ctx = ssl.create_default_context(cafile=str(tmp / "ca.crt"))
    with (
        socket.create_connection(("127.0.0.1", port), timeout=5) as raw,
        ctx.wrap_socket(raw, server_hostname=host),
    ):
        pass


@pytest.fixture
def webhook_tls() -> tuple[Any, bytes]:
    bundle = certs.generate_in_subprocess(["localhost"], ["127.0.0.1"])
    return certs.server_context(bundle.cert, bundle.key), bundle.ca_cert


def serve(base_url: str | None, webhook_tls: tuple[Any, bytes]) -> statusserver.StatusServer:
    options = statusserver.Options(host="127.0.0.1", port=0, base_url=base_url)
    server = statusserver.StatusServer(cast(Client, None), options, lambda: webhook_tls)
    server.start()
    return server


def test_no_url_shares_the_webhook_certificate(
    webhook_tls: tuple[Any, bytes], tmp_path: Path
) -> None:
    server = serve(None, webhook_tls)
    try:
        assert server.ca_bundle == webhook_tls[1]
        handshake(server.port, server.ca_bundle, "127.0.0.1", tmp_path)
    finally:
        server.stop()


@pytest.mark.parametrize("host", ["10.245.7.1", "status.example.test"])
def test_url_elsewhere_gets_a_certificate_for_its_host(
    host: str, webhook_tls: tuple[Any, bytes], tmp_path: Path
) -> None:
    server = serve(f"https://{host}:8443", webhook_tls)
    try:
        assert server.ca_bundle != webhook_tls[1]
        handshake(server.port, server.ca_bundle, host, tmp_path)  # valid for the URL's host
        handshake(server.port, server.ca_bundle, "127.0.0.1", tmp_path)  # and still loopback
    finally:
        server.stop()
