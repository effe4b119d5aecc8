"""The webhook server alone, for tests that attack it: ``python -m tests.unit.controller.webhook_server
CERT_DIR`` serves trainjob's admission routes (the real ones) over TLS on a free loopback port,
writes ``ca.crt`` to CERT_DIR and prints ``PORT <n>``, then serves until killed.

Runtime reviews need no cluster, so no apiserver runs. ``REQUEST_TIMEOUT`` and
``HANDSHAKE_TIMEOUT`` come from the environment when set, to keep deadline tests short.
"""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path
from typing import Any

from trainjob.controller.webhooks.serving import Options, WebhookServer
from trainjob.kube import certs, http


def main() -> None:
    out = Path(sys.argv[1])
    for name in ("REQUEST_TIMEOUT", "HANDSHAKE_TIMEOUT"):
        if name in os.environ:
            setattr(http, name, float(os.environ[name]))
    bundle = certs.generate(["localhost"], ["127.0.0.1"])
    (out / "ca.crt").write_bytes(bundle.ca_cert)
    client: Any = None  # runtime validation never calls the cluster
    hooks = WebhookServer(client, Options(mode="certdir"))
    server = http.serve(
        "127.0.0.1",
        0,
        hooks.routes(),
        "webhooks",
        certs.server_context(bundle.cert, bundle.key),
        inline=hooks.inline_routes(),
    )
    print(f"PORT {server.port}", flush=True)
    threading.Event().wait()


if __name__ == "__main__":
    main()
