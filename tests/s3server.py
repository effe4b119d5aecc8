"""A real S3-compatible server for tests: moto's ThreadedMotoServer on a free port.

Used by the initializer tests (tests/unit/initializers) and the LLM fine-tune e2e test: boto3 and
trainjob's S3 initializer speak the real S3 REST protocol to it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any


@contextlib.contextmanager
def moto_s3(key_id: str, secret: str, region: str = "us-east-1") -> Iterator[tuple[str, Any]]:
    """(endpoint, boto3 S3 client) of a server running for the ``with`` block."""
    import boto3
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        endpoint = f"http://{host}:{port}"
        client = boto3.client(
            "s3",
            endpoint_url=endpoint,
            aws_access_key_id=key_id,
            aws_secret_access_key=secret,
            region_name=region,
        )
        yield endpoint, client
    finally:
        server.stop()
