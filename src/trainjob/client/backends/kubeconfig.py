"""How to reach a cluster's apiserver: kubeconfig files, in-cluster config, or a client config.

Reads what ``kubectl`` reads, with no ``kubernetes`` package: the server URL, the CA (file or
``-data``), TLS verification, and credentials (bearer token or token file, client certificate and
key, basic auth, or an ``exec`` credential plugin). Several ``$KUBECONFIG`` files merge as
``kubectl`` merges them (first wins). Secrets are never logged. Called by
:mod:`trainjob.client.backends.kubernetes`.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import ssl
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from trainjob.client.config import SERVICE_ACCOUNT_DIR, KubernetesBackendConfig, kubeconfig_paths
from trainjob.errors import ConfigError


@dataclass
class Connection:
    """Everything an HTTP client needs to talk to one apiserver as one user."""

    server: str
    namespace: str = "default"
    verify: ssl.SSLContext | bool = True
    token: str | None = None
    token_file: str | None = None
    basic_auth: tuple[str, str] | None = None
    exec_config: dict[str, Any] | None = None
    headers: dict[str, str] = field(default_factory=dict)

    def bearer_token(self) -> str | None:
        """The current token: a token file is re-read (projected tokens rotate)."""
        if self.token_file:
            try:
                return Path(self.token_file).read_text().strip()
            except OSError as e:
                raise ConfigError(f"cannot read token file {self.token_file}: {e}") from e
        if self.exec_config is not None:
            return exec_credential(self.exec_config).get("token")
        return self.token

    def auth_headers(self) -> dict[str, str]:
        out = dict(self.headers)
        token = self.bearer_token()
        if token:
            out["Authorization"] = f"Bearer {token}"
        elif self.basic_auth:
            raw = f"{self.basic_auth[0]}:{self.basic_auth[1]}".encode()
            out["Authorization"] = "Basic " + base64.b64encode(raw).decode()
        return out


def _load_docs(paths: list[Path]) -> dict[str, Any]:
    merged: dict[str, Any] = {"clusters": [], "users": [], "contexts": []}  # + current-context
    seen: dict[str, set[str]] = {k: set() for k in merged}
    for path in paths:
        if not path.is_file():
            continue
        try:
            doc = yaml.safe_load(path.read_text()) or {}
        except (OSError, yaml.YAMLError) as e:
            raise ConfigError(f"cannot read kubeconfig {path}: {e}") from e
        if not isinstance(doc, dict):
            raise ConfigError(f"kubeconfig {path} is not a YAML mapping")
        for key in ("clusters", "users", "contexts"):
            for item in doc.get(key) or ():
                name = item.get("name")
                if name in seen[key]:
                    continue
                seen[key].add(name)
                item = dict(item)
                item["_dir"] = str(path.parent)
                merged[key].append(item)
        if not merged.get("current-context") and doc.get("current-context"):
            merged["current-context"] = doc["current-context"]
    return merged


def _named(items: list[dict[str, Any]], name: str, what: str) -> dict[str, Any]:
    for item in items:
        if item.get("name") == name:
            return item
    raise ConfigError(f"kubeconfig has no {what} named {name!r}")


def _path(base: str, value: str) -> str:
    p = Path(value).expanduser()
    return str(p if p.is_absolute() else Path(base) / p)


def _ssl_context(
    ca_file: str | None,
    ca_data: str | None,
    cert_file: str | None,
    key_file: str | None,
    cert_data: str | None,
    key_data: str | None,
) -> ssl.SSLContext:
    # With a CA given only that CA is trusted (as kubectl); else the system's.
    cadata = base64.b64decode(ca_data).decode() if ca_data else None
    ctx = ssl.create_default_context(cafile=ca_file, cadata=cadata)
    if cert_data or key_data:
        tmp = tempfile.mkdtemp(prefix="trainjob-kube-")
        try:
            cf, kf = os.path.join(tmp, "client.crt"), os.path.join(tmp, "client.key")
            for path, data in ((cf, cert_data), (kf, key_data)):
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                with os.fdopen(fd, "wb") as f:
                    f.write(base64.b64decode(data or ""))
            ctx.load_cert_chain(cf, kf)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    elif cert_file:
        ctx.load_cert_chain(cert_file, key_file)
    return ctx


def exec_credential(spec: dict[str, Any]) -> dict[str, Any]:
    """Run a kubeconfig ``exec`` credential plugin (no shell); its ``status`` dict."""
    command = spec.get("command")
    if not command:
        raise ConfigError("kubeconfig exec plugin has no command")
    env = dict(os.environ)
    for item in spec.get("env") or ():
        env[str(item.get("name"))] = str(item.get("value", ""))
    try:
        out = subprocess.run(
            [command, *[str(a) for a in spec.get("args") or ()]],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
            check=True,
        )
    except (OSError, subprocess.SubprocessError) as e:
        raise ConfigError(f"kubeconfig exec plugin {command!r} failed: {e}") from e
    try:
        status = json.loads(out.stdout).get("status") or {}
    except (ValueError, AttributeError) as e:
        raise ConfigError(f"kubeconfig exec plugin {command!r} printed no ExecCredential") from e
    return dict(status)


def from_kubeconfig(config_file: str | None = None, context: str | None = None) -> Connection:
    """The connection of ``context`` (default: current) in ``config_file`` or ``$KUBECONFIG``."""
    paths = [Path(config_file).expanduser()] if config_file else kubeconfig_paths()
    if not any(p.is_file() for p in paths):
        raise ConfigError(
            "no kubeconfig found (looked at " + ", ".join(str(p) for p in paths) + "); "
            "set KUBECONFIG or use the local backend"
        )
    doc = _load_docs(paths)
    ctx_name = context or doc.get("current-context")
    if not ctx_name:
        raise ConfigError("kubeconfig has no current-context; pass context=")
    ctx: dict[str, Any] = _named(doc["contexts"], ctx_name, "context").get("context") or {}
    cluster_item = _named(doc["clusters"], ctx.get("cluster", ""), "cluster")
    cluster: dict[str, Any] = cluster_item.get("cluster") or {}
    user_item: dict[str, Any] = (
        _named(doc["users"], ctx["user"], "user") if ctx.get("user") else {"user": {}, "_dir": "."}
    )
    user: dict[str, Any] = user_item.get("user") or {}
    server = cluster.get("server")
    if not server:
        raise ConfigError(f"kubeconfig cluster {ctx.get('cluster')!r} has no server")
    cdir, udir = cluster_item["_dir"], user_item["_dir"]
    conn = Connection(server=str(server).rstrip("/"), namespace=ctx.get("namespace") or "default")
    if "auth-provider" in user:
        raise ConfigError(
            "kubeconfig auth-provider plugins are not supported; use an exec plugin or a token"
        )
    exec_status: dict[str, Any] = {}
    if user.get("exec"):
        exec_status = exec_credential(user["exec"])
        if not exec_status.get("clientCertificateData"):
            conn.exec_config = user["exec"]
    if cluster.get("insecure-skip-tls-verify"):
        conn.verify = False
    else:
        cert_file = user.get("client-certificate")
        key_file = user.get("client-key")
        conn.verify = _ssl_context(
            _path(cdir, cluster["certificate-authority"])
            if cluster.get("certificate-authority")
            else None,
            cluster.get("certificate-authority-data"),
            _path(udir, cert_file) if cert_file else None,
            _path(udir, key_file) if key_file else None,
            user.get("client-certificate-data")
            or (
                base64.b64encode(exec_status["clientCertificateData"].encode()).decode()
                if exec_status.get("clientCertificateData")
                else None
            ),
            user.get("client-key-data")
            or (
                base64.b64encode(exec_status["clientKeyData"].encode()).decode()
                if exec_status.get("clientKeyData")
                else None
            ),
        )
    if user.get("token"):
        conn.token = str(user["token"])
    elif user.get("tokenFile"):
        conn.token_file = _path(udir, user["tokenFile"])
    elif user.get("username") is not None and user.get("password") is not None:
        conn.basic_auth = (str(user["username"]), str(user["password"]))
    return conn


def in_cluster(sa_dir: Path = SERVICE_ACCOUNT_DIR) -> Connection:
    """The pod's service-account connection (``KUBERNETES_SERVICE_HOST`` and the token files)."""
    host = os.environ.get("KUBERNETES_SERVICE_HOST")
    port = os.environ.get("KUBERNETES_SERVICE_PORT", "443")
    if not host or not (sa_dir / "token").is_file():
        raise ConfigError("not running in a Kubernetes pod (no service account token)")
    if ":" in host:
        host = f"[{host}]"
    ns_file = sa_dir / "namespace"
    namespace = ns_file.read_text().strip() if ns_file.is_file() else "default"
    ca = sa_dir / "ca.crt"
    verify = ssl.create_default_context(cafile=str(ca)) if ca.is_file() else True
    return Connection(
        server=f"https://{host}:{port}",
        namespace=namespace,
        verify=verify,
        token_file=str(sa_dir / "token"),
    )


def from_client_configuration(cfg: Any) -> Connection:
    """A ``kubernetes.client.Configuration`` (duck-typed: host, api_key, TLS files)."""
    host = getattr(cfg, "host", None)
    if not host:
        raise ConfigError("client_configuration has no host")
    verify: ssl.SSLContext | bool = True
    if getattr(cfg, "verify_ssl", True) is False:
        verify = False
    else:
        verify = ssl.create_default_context(cafile=getattr(cfg, "ssl_ca_cert", None))
        if getattr(cfg, "cert_file", None):
            verify.load_cert_chain(cfg.cert_file, getattr(cfg, "key_file", None))
    conn = Connection(server=str(host).rstrip("/"), verify=verify)
    api_key = getattr(cfg, "api_key", None) or {}
    prefix = getattr(cfg, "api_key_prefix", None) or {}
    key = api_key.get("authorization") or api_key.get("BearerToken")
    if key:
        pre = prefix.get("authorization") or prefix.get("BearerToken") or ""
        conn.headers["Authorization"] = f"{pre} {key}".strip() if pre else str(key)
        if not pre and not str(key).lower().startswith(("bearer ", "basic ")):
            conn.headers["Authorization"] = f"Bearer {key}"
    return conn


def connect(cfg: KubernetesBackendConfig) -> Connection:
    """The connection a KubernetesBackendConfig describes (rules as upstream's SDK)."""
    if cfg.client_configuration is not None:
        conn = from_client_configuration(cfg.client_configuration)
    elif cfg.config_file or not os.environ.get("KUBERNETES_SERVICE_HOST"):
        conn = from_kubeconfig(cfg.config_file, cfg.context)
    else:
        conn = in_cluster()
    if cfg.namespace:
        conn.namespace = cfg.namespace
    return conn
