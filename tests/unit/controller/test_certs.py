"""Webhook certificates: a client that trusts only our CA completes a TLS handshake with the
server, on loopback, and an HTTPS request through the webhook HTTP server succeeds."""

from __future__ import annotations

import ssl
import subprocess
import sys

import httpx
import pytest

from trainjob.kube import certs, http


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


def test_certificates_made_in_a_child_process_serve_and_read_as_cryptography_reads_them() -> None:
    from cryptography import x509

    bundle = certs.generate_in_subprocess(["svc", "svc.ns.svc"], ["127.0.0.1"], "test-ca")
    parsed = x509.load_pem_x509_certificate(bundle.cert)
    san = parsed.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert san.get_values_for_type(x509.DNSName) == ["svc", "svc.ns.svc"]
    assert certs.covers(bundle.cert, ["svc", "svc.ns.svc"])
    assert not certs.covers(bundle.cert, ["127.0.0.1"])  # an IP SAN is not a DNS name
    assert certs._not_after(certs._tbs(bundle.cert)) == parsed.not_valid_after_utc
    ca = x509.load_pem_x509_certificate(bundle.ca_cert)
    assert certs._not_after(certs._tbs(bundle.ca_cert)) == ca.not_valid_after_utc
    assert not certs.covers(bundle.ca_cert, ["svc"])  # the CA has no subjectAltName
    server = http.serve(
        "127.0.0.1",
        0,
        {("POST", "/echo"): lambda body: (200, "application/octet-stream", body)},
        "test",
        ssl_context=certs.server_context(bundle.cert, bundle.key),
    )
    try:
        ctx = ssl.create_default_context(cadata=bundle.ca_cert.decode())
        with httpx.Client(verify=ctx) as c:
            assert c.post(f"https://127.0.0.1:{server.port}/echo", content=b"x").content == b"x"
    finally:
        server.stop()


@pytest.mark.parametrize(
    "pem",
    [
        b"",
        b"-----BEGIN CERTIFICATE-----\n!!!\n-----END CERTIFICATE-----\n",
        b"-----BEGIN CERTIFICATE-----\nMAMCAQE=\n-----END CERTIFICATE-----\n",  # SEQUENCE{INT 1}
        b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n",  # truncated
    ],
)
def test_what_is_not_a_certificate_is_stale_and_covers_nothing(pem: bytes) -> None:
    assert certs.expires_within(pem, 1)
    assert not certs.covers(pem, ["svc"])


def test_the_controller_process_does_not_load_cryptography() -> None:
    """Its certificates are made in a child (certs.generate_in_subprocess): cryptography's own
    OpenSSL would add ~8.7 MiB to the controller's RSS."""
    code = (
        "import sys, trainjob.cli.controller, trainjob.controller.manager; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'cryptography'))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
