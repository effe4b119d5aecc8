"""Webhook certificates: a client that trusts only our CA completes a TLS handshake with the
server, on loopback, and an HTTPS request through the webhook HTTP server succeeds."""

from __future__ import annotations

import ssl

import httpx
import pytest

from trainjob import certs
from trainjob.controller import http


def test_a_client_trusting_the_ca_talks_to_the_server_over_tls() -> None:
    bundle = certs.generate(["localhost"], ["127.0.0.1"])
    server = http.serve(
        "127.0.0.1",
        0,
        {("POST", "/echo"): lambda body: (200, "application/octet-stream", body[::-1])},
        "test",
        ssl_context=certs.server_context(bundle.cert, bundle.key),
    )
    try:
        ctx = ssl.create_default_context(cadata=bundle.ca_cert.decode())
        with httpx.Client(verify=ctx) as c:
            resp = c.post(f"https://127.0.0.1:{server.port}/echo", content=b"abc")
            assert resp.status_code == 200 and resp.content == b"cba"
            missing = c.post(f"https://127.0.0.1:{server.port}/nope", content=b"")
            assert missing.status_code == 404
        untrusted = ssl.create_default_context()
        with httpx.Client(verify=untrusted) as c, pytest.raises(httpx.ConnectError):
            c.post(f"https://127.0.0.1:{server.port}/echo", content=b"abc")
    finally:
        server.stop()


def test_certificate_coverage_and_expiry() -> None:
    bundle = certs.generate(["svc", "svc.ns.svc"])
    assert certs.covers(bundle.cert, ["svc.ns.svc"])
    assert not certs.covers(bundle.cert, ["other.ns.svc"])
    assert not certs.expires_within(bundle.cert, 30 * 24 * 3600)
    assert certs.expires_within(bundle.cert, 400 * 24 * 3600)
    assert certs.expires_within(b"not a certificate", 1)
