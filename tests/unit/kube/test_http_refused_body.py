"""A body over a server's cap is answered 413, and the client hears it (not a reset connection).

The status endpoint takes bodies of at most 64 KiB. A client (upstream's helper uses urllib) sends
its whole body before it reads the answer; had the server closed with the body unread, the kernel
would reset the connection and the client would see ``ConnectionResetError``/``SSLEOFError``
instead of the 413 (CI saw this at 5fb7af9). The server reads and drops up to 1 MiB of a refused
body before closing, as nginx's lingering close does.
"""

from __future__ import annotations

import ssl
import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest

from trainjob.kube import certs, http


@pytest.fixture
def server() -> Iterator[tuple[http.Server, ssl.SSLContext]]:
    def ok(request: http.Request) -> http.Response:
        return 200, "text/plain", b"ok\n"

    bundle = certs.generate(["localhost"], ["127.0.0.1"])
    context = certs.server_context(bundle.cert, bundle.key)
    srv = http.serve("127.0.0.1", 0, {}, "test", context, handler=ok, max_body=64 * 1024)
    yield srv, ssl.create_default_context(cadata=bundle.ca_cert.decode())
    srv.stop()


def _post(port: int, client: ssl.SSLContext, body: bytes) -> int:
    req = urllib.request.Request(f"https://localhost:{port}/x", data=body, method="POST")
    try:
        with urllib.request.urlopen(req, context=client, timeout=10) as resp:
            return int(resp.status)
    except urllib.error.HTTPError as e:
        return e.code


def test_a_body_over_the_cap_is_a_413_that_the_client_reads(
    server: tuple[http.Server, ssl.SSLContext],
) -> None:
    srv, client = server
    # 64 KiB + 1 (the status endpoint's test) to 1 MiB: the client is still sending at the refusal
    for size in (64 * 1024 + 1, 256 * 1024, 1024 * 1024):
        codes = [_post(srv.port, client, b" " * size) for _ in range(10)]
        assert codes == [413] * 10, size
    assert _post(srv.port, client, b"{}") == 200  # and the server still serves
