"""The TrainJob status endpoint (KEP-2779) of one local job, served by its supervisor.

The supervisor starts a :class:`StatusServer` on loopback with a CA and a bearer token of the
job's own (:func:`credentials`, files under the job's directory, the token readable by its owner
only), and gives every trainer pod upstream's env (:func:`pod_env`): ``KUBEFLOW_TRAINER_SERVER_URL``
(``https://127.0.0.1:<port>/apis/trainer.kubeflow.org/v1alpha1/namespaces/NS/trainjobs/NAME/status``),
``..._CA_CERT`` and ``..._TOKEN`` (the files). So the same training code reports here and on a
cluster, :func:`trainjob.update_trainjob_status` and the Kubeflow SDK's own helper alike, TLS
verified as there. Another local job has another CA and token: a post with its token, to another
job's path, without a token or with a body the CRD refuses gets upstream's Status error (403,
404, 413, 422) and changes nothing.

An accepted update is handed to ``on_update`` (the supervisor queues it and writes it to the
store on its next tick: the TrainJob's ``status.trainerStatus`` and each metric's history).
"""

from __future__ import annotations

import hmac
import json
import logging
import secrets
import threading
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from trainjob.core import trainerstatus as ts
from trainjob.kube import certs
from trainjob.local.state import files

log = logging.getLogger(__name__)

HOST = "127.0.0.1"
DIR_NAME = "status-server"


@dataclass(frozen=True)
class Credentials:
    """The job's CA certificate file, token file and token, and the server's cert and key."""

    ca_file: Path
    token_file: Path
    token: str
    cert: bytes
    key: bytes


def credentials(job_dir: Path) -> Credentials:
    """A fresh CA, serving certificate (for 127.0.0.1 and localhost) and token for one job,
    written under ``job_dir/status-server/`` (``ca.crt``; ``token`` mode 0600)."""
    job_dir.mkdir(mode=files.DIR_MODE, parents=True, exist_ok=True)
    d = files.private_dirs(job_dir, job_dir / DIR_NAME)  # 0700, never through a link
    bundle = certs.generate(["localhost"], [HOST], ca_name="trainjob-local-status-ca")
    token = secrets.token_urlsafe(32)
    ca_file, token_file = d / ts.CA_CERT_FILE, d / ts.TOKEN_FILE
    files.write_private(ca_file, bundle.ca_cert)
    files.write_private(token_file, (token + "\n").encode())
    return Credentials(ca_file, token_file, token, bundle.cert, bundle.key)


def pod_env(url: str, creds: Credentials) -> dict[str, str]:
    """The env upstream's TrainJobStatus plugin gives a trainer container, pointing here."""
    return {
        ts.ENV_SERVER_URL: url,
        ts.ENV_CA_CERT: str(creds.ca_file),
        ts.ENV_TOKEN: str(creds.token_file),
    }


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        # a client that fails the TLS handshake (another CA) or goes away: not the server's error
        log.debug("status server: connection from %s failed", client_address, exc_info=True)


class StatusServer:
    """HTTPS on loopback for one job's status endpoint, in daemon threads."""

    def __init__(
        self,
        namespace: str,
        name: str,
        creds: Credentials,
        on_update: Callable[[dict[str, Any]], None],
    ) -> None:
        self.namespace, self.name, self.creds, self.on_update = namespace, name, creds, on_update
        self.accepted = 0
        self.refused = 0
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            server_version = "trainjob-status"
            disable_nagle_algorithm = True  # headers and body go out at once (no 40 ms ACK wait)
            timeout = 10

            def do_POST(self) -> None:
                code, body = server.handle(self.path, self.headers, self._body())
                self._reply(code, body)

            def do_GET(self) -> None:
                self._reply(404, ts.not_found("Not found").body())

            do_PUT = do_PATCH = do_DELETE = do_GET

            def _body(self) -> bytes | None:
                raw = self.headers.get("Content-Length")
                if raw is None or not raw.isdigit() or int(raw) > ts.MAX_BODY:
                    self.close_connection = True
                    return None
                return self.rfile.read(int(raw))

            def _reply(self, code: int, body: bytes) -> None:
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                log.debug("status server: " + format, *args)

        context = certs.server_context(creds.cert, creds.key)
        self._httpd = _HTTPServer((HOST, 0), Handler)
        # the handshake happens in the request's own thread: a stalled client holds up no other
        self._httpd.socket = context.wrap_socket(
            self._httpd.socket, server_side=True, do_handshake_on_connect=False
        )
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, args=(0.05,), name="status-server", daemon=True
        )
        self._thread.start()

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        return f"https://{HOST}:{self.port}{ts.path(self.namespace, self.name)}"

    def handle(self, path: str, headers: Any, body: bytes | None) -> tuple[int, bytes]:
        """(HTTP code, JSON body) for one POST, as upstream's status server answers it."""
        try:
            where = ts.parse_path(path)
            if where is None:
                raise ts.not_found("Not found")
            if body is None:
                raise (
                    ts.too_large()
                    if headers.get("Content-Length")
                    else ts.RequestError(411, ts.REASON_INVALID, "Content-Length required")
                )
            token = ts.bearer(headers.get("Authorization"))
            if not token or not hmac.compare_digest(token, self.creds.token):
                raise ts.forbidden()
            if where != (self.namespace, self.name):
                raise ts.forbidden()  # this job's token is for this job's path only
            status = ts.parse_request(body)
        except ts.RequestError as e:
            self.refused += 1
            return e.code, e.body()
        if status is not None:
            self.on_update(status)
        self.accepted += 1
        return 200, (json.dumps({"trainerStatus": status}) + "\n").encode()

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)
