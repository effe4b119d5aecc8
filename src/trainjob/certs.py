"""Certificates for trainjob's TLS servers: a self-signed CA and a serving certificate it signs.

:func:`generate` makes both (ECDSA P-256; the CA for 10 years, the serving certificate for one,
for the given DNS names and IP addresses). :func:`server_context` turns a certificate and key
(PEM) into the TLS context a server uses; :func:`expires_within` tells when to rotate.

Used by the webhook server (:mod:`trainjob.controller.webhooks.serving`: dev mode on loopback and
the in-cluster self-managed Secret), the controller's TrainJob status server and the local
supervisor's (a CA per job), so it lives below all of them.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import ssl
import tempfile
from dataclasses import dataclass

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

CA_DAYS = 3650
SERVING_DAYS = 365


@dataclass(frozen=True)
class CertBundle:
    """PEM bytes: the CA certificate (the webhook ``caBundle``), the serving cert and its key."""

    ca_cert: bytes
    cert: bytes
    key: bytes


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def generate(
    dns_names: list[str],
    ip_addresses: list[str] | None = None,
    ca_name: str = "trainjob-webhook-ca",
) -> CertBundle:
    now = datetime.datetime.now(datetime.UTC) - datetime.timedelta(minutes=5)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(_name(ca_name))
        .issuer_name(_name(ca_name))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(now + datetime.timedelta(days=CA_DAYS))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), False)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    sans: list[x509.GeneralName] = [x509.DNSName(d) for d in dns_names]
    sans += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in ip_addresses or []]
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(dns_names[0] if dns_names else "trainjob-webhook"))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(now + datetime.timedelta(days=SERVING_DAYS))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.SubjectAlternativeName(sans), critical=False)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), False
        )
        .sign(ca_key, hashes.SHA256())
    )
    return CertBundle(
        ca_cert=ca_cert.public_bytes(serialization.Encoding.PEM),
        cert=cert.public_bytes(serialization.Encoding.PEM),
        key=key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        ),
    )


def expires_within(cert_pem: bytes, seconds: float) -> bool:
    """True when the certificate ends within ``seconds`` (or cannot be read)."""
    try:
        cert = x509.load_pem_x509_certificate(cert_pem)
    except ValueError:
        return True
    end = cert.not_valid_after_utc
    return end - datetime.datetime.now(datetime.UTC) < datetime.timedelta(seconds=seconds)


def covers(cert_pem: bytes, dns_names: list[str]) -> bool:
    """True when the certificate's SANs include every one of ``dns_names``."""
    try:
        cert = x509.load_pem_x509_certificate(cert_pem)
        san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except (ValueError, x509.ExtensionNotFound):
        return False
    have = set(san.get_values_for_type(x509.DNSName))
    return set(dns_names) <= have


def server_context(cert_pem: bytes, key_pem: bytes) -> ssl.SSLContext:
    """A server-side TLS context (TLS 1.2+) serving this certificate and key."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    with tempfile.TemporaryDirectory(prefix="trainjob-webhook-") as d:
        cert_file, key_file = os.path.join(d, "tls.crt"), os.path.join(d, "tls.key")
        fd = os.open(key_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(key_pem)
        with open(cert_file, "wb") as f:
            f.write(cert_pem)
        ctx.load_cert_chain(cert_file, key_file)
    return ctx
