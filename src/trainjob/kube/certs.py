"""Certificates for trainjob's TLS servers: a self-signed CA and a serving certificate it signs.

:func:`generate` makes both (ECDSA P-256; the CA for 10 years, the serving certificate for one,
for the given DNS names and IP addresses). :func:`server_context` turns a certificate and key
(PEM) into the TLS context a server uses; :func:`expires_within` tells when to rotate.

:func:`generate_in_subprocess` is :func:`generate` run in a short-lived child
(``python -m trainjob.kube.certs``), for the controller: a long-running process that never imports
``cryptography`` does not map its own copy of OpenSSL (measured: +8.7 MiB RSS, a sixth of the
controller's), so the module imports ``cryptography`` only where a function needs it, and
:func:`expires_within` and :func:`covers` read the few DER fields they need themselves.

Used by the webhook server (:mod:`trainjob.controller.webhooks.serving`: dev mode on loopback and
the in-cluster self-managed Secret), the controller's TrainJob status server and the local
supervisor's (a CA per job), so it lives below all of them.
"""

from __future__ import annotations

import base64
import binascii
import datetime
import ipaddress
import json
import os
import ssl
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cryptography import x509

CA_DAYS = 3650
SERVING_DAYS = 365


@dataclass(frozen=True)
class CertBundle:
    """PEM bytes: the CA certificate (the webhook ``caBundle``), the serving cert and its key."""

    ca_cert: bytes
    cert: bytes
    key: bytes


def _name(common_name: str) -> x509.Name:
    from cryptography import x509
    from cryptography.x509.oid import NameOID

    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def generate(
    dns_names: list[str],
    ip_addresses: list[str] | None = None,
    ca_name: str = "trainjob-webhook-ca",
) -> CertBundle:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID

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


def generate_in_subprocess(
    dns_names: list[str],
    ip_addresses: list[str] | None = None,
    ca_name: str = "trainjob-webhook-ca",
) -> CertBundle:
    """:func:`generate` in a child process (about 0.2 s), whose answer comes back on a pipe: the
    caller never imports ``cryptography`` (see the module docstring)."""
    request = json.dumps({"dns": dns_names, "ips": ip_addresses or [], "ca_name": ca_name})
    done = subprocess.run(
        [sys.executable, "-m", "trainjob.kube.certs"],
        input=request.encode(),
        capture_output=True,
        check=False,
        timeout=60,
    )
    if done.returncode != 0:
        why = done.stderr.decode(errors="replace").strip().splitlines()
        raise RuntimeError(f"generating certificates failed: {why[-1] if why else done.returncode}")
    answer = json.loads(done.stdout)
    return CertBundle(**{k: answer[k].encode() for k in ("ca_cert", "cert", "key")})


def expires_within(cert_pem: bytes, seconds: float) -> bool:
    """True when the certificate ends within ``seconds`` (or cannot be read)."""
    try:
        end = _not_after(_tbs(cert_pem))
    except ValueError:
        return True
    return end - datetime.datetime.now(datetime.UTC) < datetime.timedelta(seconds=seconds)


def covers(cert_pem: bytes, dns_names: list[str]) -> bool:
    """True when the certificate's SANs include every one of ``dns_names``."""
    try:
        have = set(_san_dns_names(_tbs(cert_pem)))
    except ValueError:
        return False
    return set(dns_names) <= have


# -- the DER of an X.509 certificate, as far as expires_within and covers read it (RFC 5280) ------
_SEQUENCE, _OID, _OCTET_STRING, _BOOLEAN = 0x30, 0x06, 0x04, 0x01
_SAN_OID = bytes.fromhex("551d11")  # 2.5.29.17 subjectAltName
_DNS_NAME = 0x82  # GeneralName [2] IA5String


def _tlv(der: bytes, at: int) -> tuple[int, int, int]:
    """(tag, start of the value, end of the value) of the element at ``at``."""
    if at + 2 > len(der):
        raise ValueError("truncated DER")
    tag, length, at = der[at], der[at + 1], at + 2
    if length & 0x80:
        n = length & 0x7F
        if n == 0 or n > 4 or at + n > len(der):
            raise ValueError("bad DER length")
        length, at = int.from_bytes(der[at : at + n], "big"), at + n
    if at + length > len(der):
        raise ValueError("truncated DER")
    return tag, at, at + length


def _children(der: bytes, start: int, end: int) -> list[tuple[int, int, int]]:
    out = []
    while start < end:
        tag, vstart, vend = _tlv(der, start)
        out.append((tag, vstart, vend))
        start = vend
    return out


def _tbs(cert_pem: bytes) -> tuple[bytes, list[tuple[int, int, int]]]:
    """The DER and the fields of the first certificate's TBSCertificate."""
    text = cert_pem.decode("ascii", "replace")
    begin, end = "-----BEGIN CERTIFICATE-----", "-----END CERTIFICATE-----"
    if begin not in text or end not in text.split(begin, 1)[1]:
        raise ValueError("no PEM certificate")
    body = text.split(begin, 1)[1].split(end, 1)[0]
    try:
        der = base64.b64decode("".join(body.split()), validate=True)
    except binascii.Error as e:
        raise ValueError("bad base64") from e
    tag, start, stop = _tlv(der, 0)
    if tag != _SEQUENCE:
        raise ValueError("not a certificate")
    tag, start, stop = _tlv(der, start)
    if tag != _SEQUENCE:
        raise ValueError("not a certificate")
    fields = _children(der, start, stop)
    if fields and fields[0][0] == 0xA0:  # [0] version: v2/v3
        fields = fields[1:]
    if len(fields) < 6:
        raise ValueError("not a certificate")
    return der, fields


def _time(der: bytes, tag: int, start: int, end: int) -> datetime.datetime:
    text = der[start:end].decode("ascii")
    formats = {0x17: "%y%m%d%H%M%SZ", 0x18: "%Y%m%d%H%M%SZ"}  # UTCTime, GeneralizedTime
    if tag not in formats:
        raise ValueError("bad time")
    return datetime.datetime.strptime(text, formats[tag]).replace(tzinfo=datetime.UTC)


def _not_after(tbs: tuple[bytes, list[tuple[int, int, int]]]) -> datetime.datetime:
    der, fields = tbs
    # serialNumber, signature, issuer, validity { notBefore, notAfter }, subject, ...
    _, start, end = fields[3]
    times = _children(der, start, end)
    if len(times) != 2:
        raise ValueError("bad validity")
    return _time(der, *times[1])


def _san_dns_names(tbs: tuple[bytes, list[tuple[int, int, int]]]) -> list[str]:
    der, fields = tbs
    for tag, start, end in fields[6:]:
        if tag != 0xA3:  # [3] extensions
            continue
        (_, xstart, xend), *_ = _children(der, start, end)
        for _, estart, eend in _children(der, xstart, xend):
            parts = _children(der, estart, eend)
            if not parts or parts[0][0] != _OID or der[parts[0][1] : parts[0][2]] != _SAN_OID:
                continue
            tag, vstart, _ = parts[-1]
            if tag != _OCTET_STRING:
                raise ValueError("bad extension")
            _, nstart, nend = _tlv(der, vstart)
            return [
                der[s:e].decode("ascii")
                for t, s, e in _children(der, nstart, nend)
                if t == _DNS_NAME
            ]
    raise ValueError("no subjectAltName")


def server_context(cert_pem: bytes, key_pem: bytes) -> ssl.SSLContext:
    """A server-side TLS context (TLS 1.2+) serving this certificate and key."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    # No TLS 1.3 session tickets (OpenSSL sends two after every handshake): the apiserver's
    # webhook client keeps no session cache, so they were never used, and they cost the
    # server's one loop: a new connection's handshake and first request measured 2.06 ms of
    # CPU and 44 ms of wall time with them, 1.05 ms and 2.2 ms without (a burst of creates
    # makes the apiserver open ~30 connections at once).
    ctx.num_tickets = 0
    with tempfile.TemporaryDirectory(prefix="trainjob-webhook-") as d:
        cert_file, key_file = os.path.join(d, "tls.crt"), os.path.join(d, "tls.key")
        fd = os.open(key_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(key_pem)
        with open(cert_file, "wb") as f:
            f.write(cert_pem)
        ctx.load_cert_chain(cert_file, key_file)
    return ctx


def _main() -> None:
    """``python -m trainjob.kube.certs``: a JSON request on stdin, the PEMs as JSON on stdout."""
    req = json.loads(sys.stdin.read())
    bundle = generate(list(req["dns"]), list(req.get("ips") or []), str(req["ca_name"]))
    json.dump({k: getattr(bundle, k).decode() for k in ("ca_cert", "cert", "key")}, sys.stdout)


if __name__ == "__main__":
    _main()
