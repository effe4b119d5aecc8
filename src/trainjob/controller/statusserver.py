"""The TrainJob status endpoint (KEP-2779) on a cluster: the controller's TLS status server.

Upstream serves it behind the ``TrainJobStatus`` feature gate (off by default); trainjob's
controller serves it unless started with ``--status-server=false``. The TrainJobStatus runtime
plugin (:mod:`trainjob.runtime.plugins.trainjobstatus`) gives each trainer container the URL,
the CA and a projected ServiceAccount token whose audience names the TrainJob; a POST here is
accepted only when

1. the bearer token passes a TokenReview for that audience (the apiserver checks its signature,
   expiry and audience: a token minted for another TrainJob fails here),
2. it is a pod's token (``authentication.kubernetes.io/pod-name``/``pod-uid``) of a service
   account in the TrainJob's namespace, and
3. that pod exists with that uid and belongs to the TrainJob (its JobSet's name label is the
   TrainJob's: upstream checks only the namespace);

then ``status.trainerStatus`` is server-side applied with field manager ``trainer-status``.
Refusals are ``metav1.Status`` bodies as upstream's: 403 Forbidden, 404 (another path, no such
TrainJob), 413 (over 64 KiB), 422 Invalid (the CRD's rules, checked before anything is sent).

An accepted caller is remembered for :data:`REVIEW_TTL` seconds (by a hash of its token and the
TrainJob), so a job reporting every few seconds costs the apiserver one TokenReview and one pod
GET a minute, not two requests an update. TLS is the webhook server's certificate when it has
one (the same Service, as upstream), else a self-signed one of its own.
"""

from __future__ import annotations

import hashlib
import ipaddress
import json
import logging
import threading
import time
import urllib.parse
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from trainjob.api import constants as c
from trainjob.core import jobset as js
from trainjob.core import trainerstatus as ts
from trainjob.kube import certs, http
from trainjob.kube import resources as r
from trainjob.kube.client import Client
from trainjob.kube.errors import ApiError, NotFound

log = logging.getLogger(__name__)

Obj = dict[str, Any]

REVIEW_TTL = 60.0
"""Seconds an accepted (token, TrainJob) pair is trusted without asking the apiserver again."""
MAX_CACHED = 10_000
POD_NAME = "authentication.kubernetes.io/pod-name"
POD_UID = "authentication.kubernetes.io/pod-uid"
SA_PREFIX = "system:serviceaccount:"


@dataclass(frozen=True)
class Options:
    """``--status-server-port``, ``--status-server-host``; ``base_url``: the URL pods reach it
    at (default ``https://<webhook service>.<namespace>.svc:<port>``, as upstream)."""

    host: str = "0.0.0.0"
    port: int = 10443
    base_url: str | None = None
    service_name: str = "trainjob-controller"
    namespace: str = "trainjob-system"


class StatusServer:
    """Serves the status endpoint over TLS (see the module docstring)."""

    def __init__(
        self,
        client: Client,
        options: Options,
        tls: Callable[[], tuple[Any, bytes] | None] | None = None,
    ) -> None:
        self.client = client
        self.options = options
        self._tls = tls  # the webhook server's (ssl context, CA), when it has them
        self.server: http.Server | None = None
        self.ca_bundle = b""
        self._own_context: Any = None
        self._accepted: dict[str, float] = {}
        self._lock = threading.Lock()
        self.counts = {"accepted": 0, "refused": 0}

    @property
    def port(self) -> int:
        return self.server.port if self.server is not None else 0

    @property
    def base_url(self) -> str:
        o = self.options
        if o.base_url:
            return o.base_url.rstrip("/")
        return f"https://{o.service_name}.{o.namespace}.svc:{self.port or o.port}"

    def start(self) -> None:
        o = self.options
        self.server = http.serve(
            o.host, o.port, {}, "status", handler=self.handle, max_body=ts.MAX_BODY
        )
        self.refresh_tls()

    def _service_names(self) -> list[str]:
        svc, ns = self.options.service_name, self.options.namespace
        return [svc, f"{svc}.{ns}", f"{svc}.{ns}.svc", f"{svc}.{ns}.svc.cluster.local"]

    def _url_host(self) -> str | None:
        """The host of ``--status-server-url`` when the webhook server's certificate would not
        be valid for it (it is made for the service's names and loopback): then the server
        serves a certificate of its own that is. Found on the real node of the test cluster: a
        controller outside the cluster, pods reaching it at this machine's bridge address, each
        report refused with "IP address mismatch, certificate is not valid for '10.245.N.1'"."""
        if not self.options.base_url:
            return None
        host = urllib.parse.urlsplit(self.options.base_url).hostname
        if not host or host in (*self._service_names(), "localhost", "127.0.0.1", "::1"):
            return None
        return host

    def refresh_tls(self) -> None:
        """Serve the webhook server's current certificate, or a self-signed one of our own
        (also when pods reach us at a host of ``--status-server-url`` that certificate lacks)."""
        if self.server is None:
            return
        url_host = self._url_host()
        shared = self._tls() if self._tls is not None and url_host is None else None
        if shared is not None and shared[0] is not None and shared[1]:
            self.server.ssl_context, self.ca_bundle = shared
            return
        if self._own_context is None:
            names, ips = [*self._service_names(), "localhost"], ["127.0.0.1"]
            if url_host is not None:
                try:
                    ips.append(str(ipaddress.ip_address(url_host)))
                except ValueError:
                    names.append(url_host)
            bundle = certs.generate_in_subprocess(names, ips, "trainjob-status-ca")
            self._own_context = certs.server_context(bundle.cert, bundle.key)
            self.ca_bundle = bundle.ca_cert
        self.server.ssl_context = self._own_context

    def stop(self) -> None:
        if self.server is not None:
            self.server.stop()
            self.server = None

    # -- requests -------------------------------------------------------------------------------

    def handle(self, request: http.Request) -> http.Response:
        try:
            if request.method != "POST":
                raise ts.not_found("Not found")
            where = ts.parse_path(request.path)
            if where is None:
                raise ts.not_found("Not found")
            namespace, name = where
            self.authorize(request.headers.get("authorization"), namespace, name)
            status = ts.parse_request(request.body)
            if status is not None:
                self.patch(namespace, name, status)
        except ts.RequestError as e:
            self.counts["refused"] += 1
            return e.code, "application/json", e.body()
        self.counts["accepted"] += 1
        return 200, "application/json", json.dumps({"trainerStatus": status}).encode()

    def authorize(self, header: str | None, namespace: str, name: str) -> None:
        """Raise 403 unless the bearer token is that of a pod of TrainJob ``namespace/name``."""
        token = ts.bearer(header)
        if not token:
            raise ts.forbidden()
        key = hashlib.sha256(f"{namespace}/{name}\0{token}".encode()).hexdigest()
        now = time.monotonic()
        with self._lock:
            until = self._accepted.get(key)
        if until is not None and until > now:
            return
        self._review(token, namespace, name)
        with self._lock:
            if len(self._accepted) >= MAX_CACHED:
                self._accepted = {k: t for k, t in self._accepted.items() if t > now}
                if len(self._accepted) >= MAX_CACHED:
                    self._accepted.clear()
            self._accepted[key] = now + REVIEW_TTL

    def _review(self, token: str, namespace: str, name: str) -> None:
        audience = ts.audience(namespace, name)
        review = {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenReview",
            "spec": {"token": token, "audiences": [audience]},
        }
        try:
            answer = self.client.create(r.TOKEN_REVIEWS, review)
        except ApiError as e:
            log.warning("TokenReview for %s/%s failed: %s", namespace, name, e)
            raise ts.RequestError(500, ts.REASON_INTERNAL, "Internal error") from None
        status = answer.get("status") or {}
        if not status.get("authenticated") or audience not in (status.get("audiences") or ()):
            raise ts.forbidden()
        user = status.get("user") or {}
        username = str(user.get("username") or "")
        if not username.startswith(SA_PREFIX) or username.split(":")[2] != namespace:
            raise ts.forbidden()  # not a service account of the TrainJob's namespace
        extra: Mapping[str, list[str]] = user.get("extra") or {}
        pod_name = (extra.get(POD_NAME) or [""])[0]
        pod_uid = (extra.get(POD_UID) or [""])[0]
        if not pod_name:
            raise ts.forbidden()  # not a pod-bound token
        try:
            pod = self.client.get(r.PODS, pod_name, namespace)
        except NotFound:
            raise ts.forbidden() from None
        except ApiError as e:
            log.warning("reading pod %s/%s failed: %s", namespace, pod_name, e)
            raise ts.RequestError(500, ts.REASON_INTERNAL, "Internal error") from None
        meta = pod.get("metadata") or {}
        labels = meta.get("labels") or {}
        if meta.get("uid") != pod_uid or labels.get(js.LABEL_JOBSET_NAME) != name:
            raise ts.forbidden()  # a pod of another TrainJob (or a pod that was replaced)

    def patch(self, namespace: str, name: str, trainer_status: Obj) -> None:
        body = {
            "apiVersion": c.API_VERSION,
            "kind": c.TRAINJOB_KIND,
            "metadata": {"name": name, "namespace": namespace},
            "status": {"trainerStatus": trainer_status},
        }
        try:
            self.client.apply(
                body,
                resource=r.TRAINJOBS,
                field_manager=ts.FIELD_MANAGER,
                force=True,
                subresource="status",
            )
        except NotFound:
            raise ts.not_found() from None
        except ApiError as e:
            if e.status in (400, 422):
                raise ts.RequestError(422, ts.REASON_INVALID, e.message) from None
            log.warning("patching %s/%s status failed: %s", namespace, name, e)
            raise ts.RequestError(500, ts.REASON_INTERNAL, "Internal error") from None
