"""The webhook server and its certificates, in one of three modes.

* ``dev`` (``--self-signed-webhooks``): a CA and a certificate for the loopback host are made in
  memory; the controller registers its own Mutating/ValidatingWebhookConfigurations
  (``trainjob-dev-...``, or the names it is given: a test harness gives each controller its own, so
  two on one apiserver do not overwrite each other's) whose ``clientConfig.url`` points at
  ``https://HOST:PORT/<path>`` with that ``caBundle``, and deletes them on a clean stop (unless
  another controller re-registered them).
* ``secret`` (in a cluster, the default of the manifests): the CA and a certificate for the webhook
  Service's DNS names live in a Secret the controller creates (or rotates when it nears expiry or
  does not cover the Service); every replica serves from it and keeps the ``caBundle`` of the
  installed webhook configurations equal to its CA (re-checked every minute, so a re-applied
  manifest heals).
* ``certdir`` (cert-manager): ``tls.crt``/``tls.key`` are read from a directory, and re-read when
  they change; cert-manager's CA injector fills the ``caBundle``.

Used by ``trainjob.controller.manager``.
"""

from __future__ import annotations

import base64
import json
import logging
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trainjob.api import constants as c
from trainjob.controller.webhooks import admission
from trainjob.errors import ConfigError
from trainjob.kube import certs, http
from trainjob.kube import resources as r
from trainjob.kube.client import Client
from trainjob.kube.errors import AlreadyExists, ApiError, Conflict, NotFound
from trainjob.kube.retry import retry_on_conflict

log = logging.getLogger(__name__)

Obj = dict[str, Any]

# Dev mode only: namespaces labelled ``trainjob.dev/webhooks=disabled`` bypass the webhooks (tests
# use it to create TrainJobs whose runtime does not exist yet, as a cluster without webhooks would).
DEV_NAMESPACE_OPT_OUT = "trainjob.dev/webhooks"
DEV_MUTATING = "trainjob-dev-mutating-webhook-configuration"
DEV_VALIDATING = "trainjob-dev-validating-webhook-configuration"
MUTATING = c.MUTATING_WEBHOOK_CONFIGURATION
VALIDATING = c.VALIDATING_WEBHOOK_CONFIGURATION
RENEW_BEFORE_SECONDS = 30 * 24 * 3600
RECHECK_SECONDS = 60.0


@dataclass(frozen=True)
class Options:
    mode: str  # "dev" | "secret" | "certdir"
    host: str = "0.0.0.0"
    port: int = 9443
    cert_dir: str = ""
    secret_name: str = "trainjob-webhook-cert"
    service_name: str = "trainjob-controller"
    namespace: str = "trainjob-system"
    mutating_config: str | None = None
    """The MutatingWebhookConfiguration's name (None: :data:`DEV_MUTATING` in dev mode, else
    :data:`MUTATING`, the manifests')."""
    validating_config: str | None = None

    @property
    def mutating_name(self) -> str:
        return self.mutating_config or (DEV_MUTATING if self.mode == "dev" else MUTATING)

    @property
    def validating_name(self) -> str:
        return self.validating_config or (DEV_VALIDATING if self.mode == "dev" else VALIDATING)


def client_config(path: str, ca_bundle: bytes, url_base: str | None, service: Obj | None) -> Obj:
    cfg: Obj = {"caBundle": base64.b64encode(ca_bundle).decode()}
    if url_base is not None:
        cfg["url"] = url_base + path
    elif service is not None:
        cfg["service"] = {**service, "path": path}
    return cfg


def configurations(
    ca_bundle: bytes,
    *,
    url_base: str | None = None,
    service: Obj | None = None,
    mutating_name: str = MUTATING,
    validating_name: str = VALIDATING,
    namespace_selector: Obj | None = None,
) -> tuple[Obj, Obj]:
    """The Mutating- and ValidatingWebhookConfiguration for :data:`admission.WEBHOOKS`."""
    hooks: dict[bool, list[Obj]] = {True: [], False: []}
    for wh in admission.WEBHOOKS:
        hook: Obj = {
            "name": wh.name,
            "admissionReviewVersions": ["v1"],
            "clientConfig": client_config(wh.path, ca_bundle, url_base, service),
            "failurePolicy": "Fail",
            "sideEffects": "None",
            "timeoutSeconds": 10,
            "rules": [
                {
                    "apiGroups": [c.GROUP],
                    "apiVersions": [c.VERSION],
                    "operations": ["CREATE", "UPDATE"],
                    "resources": [wh.plural],
                }
            ],
        }
        if namespace_selector is not None:
            hook["namespaceSelector"] = namespace_selector
        if wh.match_conditions:
            hook["matchConditions"] = [
                {"name": name, "expression": expression} for name, expression in wh.match_conditions
            ]
        if wh.plural not in ("trainjobs", "optimizationjobs"):  # runtimes may opt out
            hook["objectSelector"] = {
                "matchExpressions": [
                    {"key": c.LABEL_WEBHOOK_VALIDATION, "operator": "NotIn", "values": ["disabled"]}
                ]
            }
        hooks[wh.mutating].append(hook)
    mutating = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": mutating_name},
        "webhooks": hooks[True],
    }
    validating = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": validating_name},
        "webhooks": hooks[False],
    }
    return mutating, validating


class WebhookServer:
    """Serves the admission routes over TLS and keeps its certificates (see module docstring)."""

    def __init__(
        self,
        client: Client,
        options: Options,
        cached_runtime: admission.RuntimeLookup | None = None,
        on_request: Callable[[], None] | None = None,
    ) -> None:
        self.client = client
        self.options = options
        self.on_request = on_request  # called on the server's loop as each review is handled
        self.admission = admission.Admission(client, cached_runtime=cached_runtime)
        self.server: http.Server | None = None
        self.ca_bundle = b""
        # (resource, config name) -> the resourceVersion we wrote
        self._registered: dict[tuple[r.Resource, str], str] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._cert_stamp: Any = None

    @property
    def port(self) -> int:
        return self.server.port if self.server is not None else 0

    def routes(self) -> dict[tuple[str, str], http.Route]:
        out: dict[tuple[str, str], http.Route] = {}
        for path, handler in self.admission.routes().items():
            out[("POST", path)] = _route(handler)
        return out

    def inline_routes(self) -> frozenset[tuple[str, str]]:
        """Every admission route: each reads caches and calls :func:`http.check_inline` before
        an apiserver request, so it runs on the server's loop and moves to a thread only when
        it must block (a runtime the cache lacks, an update's snapshot)."""
        return frozenset(self.routes())

    def start(self) -> None:
        o = self.options
        self.server = http.serve(
            o.host,
            o.port,
            self.routes(),
            "webhooks",
            inline=self.inline_routes(),
            on_route=self.on_request,
        )
        if o.mode == "dev":
            bundle = certs.generate_in_subprocess(["localhost"], [_loopback_ip(o.host)])
            self.ca_bundle = bundle.ca_cert
            self.server.ssl_context = certs.server_context(bundle.cert, bundle.key)
            self._register_dev()
        elif o.mode == "secret":
            self._ensure_secret_certs()
            self._inject_ca_bundles()
            self._start_loop(self._secret_tick)
        elif o.mode == "certdir":
            try:
                self._load_cert_dir()
            except (OSError, ValueError) as e:  # ssl.SSLError is an OSError
                raise ConfigError(
                    f"cannot load the webhook certificate (tls.crt, tls.key) from --cert-dir "
                    f"{o.cert_dir}: {getattr(e, 'strerror', None) or e}"
                ) from None
            self._start_loop(self._load_cert_dir)
        else:
            raise ValueError(f"unknown webhook mode {o.mode!r}")

    def stop(self) -> None:
        self._stop.set()
        if self.options.mode == "dev":
            self._unregister_dev()
        if self.server is not None:
            self.server.stop()

    def _start_loop(self, tick: Callable[[], None]) -> None:
        def loop() -> None:
            while not self._stop.wait(RECHECK_SECONDS):
                try:
                    tick()
                except Exception:
                    log.exception("refreshing webhook certificates")

        self._thread = threading.Thread(target=loop, name="webhook-certs", daemon=True)
        self._thread.start()

    # -- dev: loopback, self-registered -----------------------------------------------------------
    def _register_dev(self) -> None:
        host = _loopback_ip(self.options.host)
        url_host = f"[{host}]" if ":" in host else host
        mutating, validating = configurations(
            self.ca_bundle,
            url_base=f"https://{url_host}:{self.port}",
            mutating_name=self.options.mutating_name,
            validating_name=self.options.validating_name,
            namespace_selector={
                "matchExpressions": [
                    {"key": DEV_NAMESPACE_OPT_OUT, "operator": "NotIn", "values": ["disabled"]}
                ]
            },
        )
        for resource, obj in (
            (r.MUTATING_WEBHOOK_CONFIGURATIONS, mutating),
            (r.VALIDATING_WEBHOOK_CONFIGURATIONS, validating),
        ):
            applied = self.client.apply(obj)
            name = obj["metadata"]["name"]
            self._registered[(resource, name)] = applied["metadata"]["resourceVersion"]
        log.info(
            "registered webhooks %s and %s at %s:%d",
            self.options.mutating_name,
            self.options.validating_name,
            host,
            self.port,
        )

    def _unregister_dev(self) -> None:
        for (resource, name), rv in self._registered.items():
            try:
                self.client.delete(
                    resource, name, preconditions={"resourceVersion": rv}, ignore_not_found=True
                )
            except Conflict:
                log.info("%s was re-registered by another controller; leaving it", name)
            except ApiError as e:
                log.warning("deleting %s: %s", name, e)
        self._registered.clear()

    # -- secret: self-managed certificates --------------------------------------------------------
    def dns_names(self) -> list[str]:
        svc, ns = self.options.service_name, self.options.namespace
        return [svc, f"{svc}.{ns}", f"{svc}.{ns}.svc", f"{svc}.{ns}.svc.cluster.local"]

    def _ensure_secret_certs(self) -> None:
        o = self.options
        secret = self.client.get_or_none(r.SECRETS, o.secret_name, o.namespace)
        data = (secret or {}).get("data") or {}
        cert = _b64(data.get("tls.crt"))
        key = _b64(data.get("tls.key"))
        ca = _b64(data.get("ca.crt"))
        stale = (
            not (cert and key and ca)
            or certs.expires_within(cert, RENEW_BEFORE_SECONDS)
            or not certs.covers(cert, self.dns_names())
        )
        if stale:
            bundle = certs.generate_in_subprocess(self.dns_names())
            body: Obj = {
                "apiVersion": "v1",
                "kind": "Secret",
                "type": "kubernetes.io/tls",
                "metadata": {"name": o.secret_name, "namespace": o.namespace},
                "data": {
                    "tls.crt": base64.b64encode(bundle.cert).decode(),
                    "tls.key": base64.b64encode(bundle.key).decode(),
                    "ca.crt": base64.b64encode(bundle.ca_cert).decode(),
                },
            }
            try:
                if secret is None:
                    self.client.create(r.SECRETS, body, o.namespace)
                else:
                    body["metadata"]["resourceVersion"] = secret["metadata"]["resourceVersion"]
                    self.client.replace(r.SECRETS, body)
                log.info("wrote webhook certificates to Secret %s/%s", o.namespace, o.secret_name)
                cert, key, ca = bundle.cert, bundle.key, bundle.ca_cert
            except (AlreadyExists, Conflict):
                # Another replica wrote it first: use theirs.
                self._ensure_secret_certs()
                return
        assert cert and key and ca
        stamp = (cert, key)
        if stamp != self._cert_stamp and self.server is not None:
            self.server.ssl_context = certs.server_context(cert, key)
            self._cert_stamp = stamp
        self.ca_bundle = ca

    def _inject_ca_bundles(self) -> None:
        want = base64.b64encode(self.ca_bundle).decode()
        for resource, name in (
            (r.MUTATING_WEBHOOK_CONFIGURATIONS, self.options.mutating_name),
            (r.VALIDATING_WEBHOOK_CONFIGURATIONS, self.options.validating_name),
        ):

            def inject(resource: r.Resource = resource, name: str = name) -> None:
                cfg = self.client.get(resource, name)
                hooks = cfg.get("webhooks") or []
                if all((h.get("clientConfig") or {}).get("caBundle") == want for h in hooks):
                    return
                for h in hooks:
                    h.setdefault("clientConfig", {})["caBundle"] = want
                self.client.replace(resource, cfg)
                log.info("injected the webhook CA into %s", name)

            try:
                retry_on_conflict(inject)
            except NotFound:
                log.warning("webhook configuration %s not found; install the manifests", name)
            except ApiError as e:
                log.warning("injecting the CA into %s: %s", name, e)

    def _secret_tick(self) -> None:
        self._ensure_secret_certs()
        self._inject_ca_bundles()

    # -- certdir: files from cert-manager ----------------------------------------------------------
    def _load_cert_dir(self) -> None:
        d = Path(self.options.cert_dir)
        cert, key = d / "tls.crt", d / "tls.key"
        stamp = (os.stat(cert).st_mtime_ns, os.stat(key).st_mtime_ns)
        if stamp == self._cert_stamp:
            return
        if self.server is not None:
            self.server.ssl_context = certs.server_context(cert.read_bytes(), key.read_bytes())
        ca = d / "ca.crt"
        self.ca_bundle = ca.read_bytes() if ca.is_file() else b""
        self._cert_stamp = stamp
        log.info("loaded webhook certificates from %s", d)


def _route(handler: Callable[[Obj], admission.Verdict]) -> http.Route:
    def route(body: bytes) -> http.Response:
        # Reachable by any pod: a body that is not an AdmissionReview is the client's error (400),
        # never a traceback in the controller's log.
        try:
            doc = json.loads(body)
        except ValueError:
            return 400, "text/plain", b"the body is not JSON: send an AdmissionReview\n"
        if not isinstance(doc, dict) or not isinstance(doc.get("request") or {}, dict):
            return 400, "text/plain", b"the body is not an AdmissionReview\n"
        return 200, "application/json", admission.review(doc, handler)  # decoded once

    return route


def _b64(value: Any) -> bytes | None:
    return base64.b64decode(value) if value else None


def _loopback_ip(host: str) -> str:
    if host in ("", "0.0.0.0", "localhost"):
        return "127.0.0.1"
    if host == "::":
        return "::1"
    return host
