"""Where the apiserver is and how to authenticate: kubeconfig files, in-cluster config, and
``kubernetes.client.Configuration`` objects.

:func:`load` follows ``kubectl``'s order: an explicit kubeconfig path, else the files of
``$KUBECONFIG`` (merged as ``kubectl`` merges them: the first file to name an entry wins), else
``~/.kube/config``, else the in-cluster service account. Supported credentials: bearer
``token``/``tokenFile``, client certificate and key (``-data`` or file), basic auth, ``exec``
credential plugins (run without a shell, re-run when their token expires), impersonation (``as``,
``as-groups``, like ``kubectl --as``); server trust from ``certificate-authority(-data)`` or
``insecure-skip-tls-verify``. ``auth-provider`` plugins are not supported and say so.

Certificate and key data stay in memory; :meth:`Config.ssl_context` writes them to a private
temporary directory only while :mod:`ssl` loads them (it reads client certificates from files
only) and removes it at once. Used by :class:`trainjob.kube.client.Client` and the SDK's
kubernetes backend.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import ssl
import subprocess
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from trainjob.core import times
from trainjob.errors import ConfigError

SERVICE_ACCOUNT_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")
TOKEN_REFRESH_SECONDS = 60.0
EXEC_TIMEOUT_SECONDS = 60.0
# Entries whose relative file paths resolve next to the kubeconfig file that names them.
_FILE_KEYS = {
    "clusters": ("cluster", ("certificate-authority",)),
    "users": ("user", ("client-certificate", "client-key", "tokenFile")),
}


@dataclass
class Config:
    """A resolved connection: server URL, TLS trust, and one set of credentials."""

    server: str
    ca_file: str | None = None
    ca_data: bytes | None = None
    insecure: bool = False
    tls_server_name: str | None = None
    client_cert_file: str | None = None
    client_key_file: str | None = None
    client_cert_data: bytes | None = None
    client_key_data: bytes | None = None
    token: str | None = None
    token_file: str | None = None
    exec_plugin: dict[str, Any] | None = None
    token_expires: float | None = None
    username: str | None = None
    password: str | None = None
    impersonate: str | None = None
    impersonate_groups: tuple[str, ...] = ()
    namespace: str = "default"
    source: str = ""
    _token_read_at: float = field(default=0.0, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def ssl_context(self) -> ssl.SSLContext:
        """The TLS context for this server: its CA (or no verification) and our client cert."""
        if self.insecure:
            ctx = ssl.create_default_context()
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
        else:
            # With a CA given only that CA is trusted (as kubectl); else the system's.
            cadata = self.ca_data.decode() if self.ca_data else None
            ctx = ssl.create_default_context(cafile=self.ca_file, cadata=cadata)
        if self.client_cert_data or self.client_key_data:
            tmp = tempfile.mkdtemp(prefix="trainjob-kube-")
            try:
                cert = _private_file(tmp, "client.crt", self.client_cert_data or b"")
                key = _private_file(tmp, "client.key", self.client_key_data or b"")
                ctx.load_cert_chain(cert, key)
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
        elif self.client_cert_file:
            ctx.load_cert_chain(self.client_cert_file, self.client_key_file)
        return ctx

    def auth_headers(self) -> dict[str, str]:
        """The Authorization header: a bearer token (re-read from its file every minute) or basic."""
        headers: dict[str, str] = {}
        token = self.bearer_token()
        if token:
            headers["Authorization"] = f"Bearer {token}"
        elif self.username is not None:
            raw = f"{self.username}:{self.password or ''}".encode()
            headers["Authorization"] = "Basic " + base64.b64encode(raw).decode()
        if self.impersonate:
            headers["Impersonate-User"] = self.impersonate
        return headers

    def impersonation_headers(self) -> list[tuple[str, str]]:
        """``Impersonate-Group`` repeats once per group, so it cannot live in a dict."""
        return [("Impersonate-Group", g) for g in self.impersonate_groups]

    def bearer_token(self) -> str | None:
        """The token of ``token_file`` (re-read every minute), of the exec plugin (re-run once
        its token expired), else ``token``."""
        if self.token_file:
            with self._lock:
                now = time.monotonic()
                if self.token is None or now - self._token_read_at > TOKEN_REFRESH_SECONDS:
                    try:
                        self.token = Path(self.token_file).read_text().strip()
                    except OSError as e:
                        raise ConfigError(
                            f"cannot read the bearer token file {self.token_file}: {e.strerror}"
                        ) from None
                    self._token_read_at = now
        elif self.exec_plugin is not None:
            with self._lock:
                if self.token is None or (
                    self.token_expires is not None and time.time() >= self.token_expires
                ):
                    status = run_exec_plugin(self.exec_plugin, self.source or "kubeconfig")
                    self.token = status.get("token")
                    self.token_expires = _expiry(status)
        return self.token


def load(kubeconfig: str | os.PathLike[str] | None = None, context: str | None = None) -> Config:
    """The connection ``kubectl`` would use (see the module docstring for the order)."""
    if kubeconfig:
        return from_kubeconfig(kubeconfig, context)
    env = os.environ.get("KUBECONFIG")
    if env:
        paths = [Path(p).expanduser() for p in env.split(os.pathsep) if p]
        if any(p.is_file() for p in paths):
            return from_files(paths, context)
    home = Path.home() / ".kube" / "config"
    if home.is_file():
        return from_kubeconfig(home, context)
    if os.environ.get("KUBERNETES_SERVICE_HOST"):
        return in_cluster()
    raise ConfigError(
        "no Kubernetes configuration: pass --kubeconfig, set KUBECONFIG, create ~/.kube/config, "
        "or run inside a cluster"
    )


def in_cluster(sa_dir: Path = SERVICE_ACCOUNT_DIR) -> Config:
    """The pod's service account: ``KUBERNETES_SERVICE_HOST``/``_PORT``, token and CA files."""
    host = os.environ.get("KUBERNETES_SERVICE_HOST")
    port = os.environ.get("KUBERNETES_SERVICE_PORT", "443")
    if not host:
        raise ConfigError("not running in a cluster: KUBERNETES_SERVICE_HOST is not set")
    token_file = sa_dir / "token"
    if not token_file.is_file():
        raise ConfigError(f"not running in a cluster: {token_file} does not exist")
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"
    ns_file = sa_dir / "namespace"
    namespace = ns_file.read_text().strip() if ns_file.is_file() else "default"
    ca = sa_dir / "ca.crt"
    return Config(
        server=f"https://{host}:{port}",
        ca_file=str(ca) if ca.is_file() else None,
        token_file=str(token_file),
        namespace=namespace,
        source="in-cluster",
    )


def from_kubeconfig(path: str | os.PathLike[str], context: str | None = None) -> Config:
    """The connection of ``context`` (default: ``current-context``) of one kubeconfig file."""
    p = Path(path).expanduser()
    return from_dict(_read(p), context, base_dir=p.parent, source=str(p))


def from_files(paths: Sequence[str | os.PathLike[str]], context: str | None = None) -> Config:
    """The connection of ``context`` in several kubeconfig files merged as ``kubectl`` does.

    The first file to name a cluster, user or context (or to set ``current-context``) wins;
    relative file paths of an entry resolve next to the file it comes from. Missing files are
    skipped; with none left this is a ConfigError.
    """
    files = [Path(p).expanduser() for p in paths]
    found = [p for p in files if p.is_file()]
    if not found:
        raise ConfigError(
            "no kubeconfig found (looked at " + ", ".join(str(p) for p in files) + ")"
        )
    merged: dict[str, Any] = {"clusters": [], "users": [], "contexts": []}
    seen: dict[str, set[Any]] = {section: set() for section in merged}
    for p in found:
        doc = _read(p)
        for section in seen:
            for item in doc.get(section) or ():
                if not isinstance(item, dict) or item.get("name") in seen[section]:
                    continue
                seen[section].add(item.get("name"))
                merged[section].append(_resolved(section, item, p.parent))
        if not merged.get("current-context") and doc.get("current-context"):
            merged["current-context"] = doc["current-context"]
    return from_dict(merged, context, source=str(found[0]))


def from_dict(
    doc: dict[str, Any], context: str | None = None, base_dir: Path | None = None, source: str = ""
) -> Config:
    """The connection of one context of a kubeconfig document (already parsed)."""
    where = source or "kubeconfig"
    name = context or doc.get("current-context")
    if not name:
        raise ConfigError(f"{where}: no context given and no current-context set")
    ctx = _named(doc, "contexts", name, "context", where)
    cluster = _named(doc, "clusters", ctx.get("cluster"), "cluster", where)
    user = _named(doc, "users", ctx.get("user"), "user", where) if ctx.get("user") else {}
    if "auth-provider" in user:
        raise ConfigError(
            f"{where}: user {ctx.get('user')!r} uses an auth-provider credential plugin; "
            "auth-provider plugins are not supported: use an exec plugin, a token or a client "
            "certificate"
        )
    server = cluster.get("server")
    if not server:
        raise ConfigError(f"{where}: cluster {ctx.get('cluster')!r} has no server")
    exec_status: dict[str, Any] = {}
    if user.get("exec"):
        exec_status = run_exec_plugin(user["exec"], where, ctx.get("user"))
    base = base_dir or Path.cwd()
    ca_data = _data(cluster, "certificate-authority")
    return Config(
        server=str(server).rstrip("/"),
        ca_file=None if ca_data else _path(cluster.get("certificate-authority"), base),
        ca_data=ca_data,
        insecure=bool(cluster.get("insecure-skip-tls-verify")),
        tls_server_name=cluster.get("tls-server-name"),
        client_cert_file=_path(user.get("client-certificate"), base),
        client_key_file=_path(user.get("client-key"), base),
        client_cert_data=_data(user, "client-certificate")
        or _text(exec_status.get("clientCertificateData")),
        client_key_data=_data(user, "client-key") or _text(exec_status.get("clientKeyData")),
        token=user.get("token") or exec_status.get("token"),
        token_file=_path(user.get("tokenFile"), base),
        exec_plugin=user["exec"] if exec_status.get("token") else None,
        token_expires=_expiry(exec_status),
        username=user.get("username"),
        password=user.get("password"),
        impersonate=user.get("as"),
        impersonate_groups=tuple(user.get("as-groups") or ()),
        namespace=ctx.get("namespace") or "default",
        source=where,
    )


def from_client_configuration(cfg: Any) -> Config:
    """A ``kubernetes.client.Configuration`` (duck-typed, the package is not needed): ``host``,
    ``api_key``/``api_key_prefix`` (bearer or basic), ``verify_ssl``, ``ssl_ca_cert``,
    ``cert_file``/``key_file`` and ``tls_server_name``."""
    host = getattr(cfg, "host", None)
    if not host:
        raise ConfigError("client_configuration has no host")
    config = Config(
        server=str(host).rstrip("/"),
        ca_file=getattr(cfg, "ssl_ca_cert", None),
        insecure=getattr(cfg, "verify_ssl", True) is False,
        tls_server_name=getattr(cfg, "tls_server_name", None),
        client_cert_file=getattr(cfg, "cert_file", None),
        client_key_file=getattr(cfg, "key_file", None),
        source="client_configuration",
    )
    api_key = getattr(cfg, "api_key", None) or {}
    prefixes = getattr(cfg, "api_key_prefix", None) or {}
    key = api_key.get("authorization") or api_key.get("BearerToken")
    if not key:
        return config
    prefix = prefixes.get("authorization") or prefixes.get("BearerToken") or ""
    value = f"{prefix} {key}" if prefix else str(key)
    scheme, _, credential = value.partition(" ")
    if scheme.lower() == "bearer" and credential:
        config.token = credential.strip()
    elif scheme.lower() == "basic" and credential:
        user, _, password = base64.b64decode(credential.strip()).decode().partition(":")
        config.username, config.password = user, password
    elif not prefix:
        config.token = value
    else:
        raise ConfigError(f"client_configuration: unsupported api_key_prefix {prefix!r}")
    return config


def run_exec_plugin(spec: dict[str, Any], where: str, user: Any = None) -> dict[str, Any]:
    """Run a kubeconfig ``exec`` credential plugin (argv, no shell); its ExecCredential status."""
    command = spec.get("command")
    what = f"{where}: user {user!r} uses an exec credential plugin ({command!r})"
    if not command:
        raise ConfigError(f"{what} without a command")
    env = dict(os.environ)
    for item in spec.get("env") or ():
        env[str(item.get("name"))] = str(item.get("value", ""))
    env["KUBERNETES_EXEC_INFO"] = json.dumps(
        {
            "apiVersion": spec.get("apiVersion") or "client.authentication.k8s.io/v1",
            "kind": "ExecCredential",
            "spec": {"interactive": False},
        }
    )
    try:
        out = subprocess.run(
            [str(command), *[str(a) for a in spec.get("args") or ()]],
            capture_output=True,
            text=True,
            env=env,
            timeout=EXEC_TIMEOUT_SECONDS,
            check=True,
        )
    except (OSError, subprocess.SubprocessError) as e:
        raise ConfigError(f"{what} that failed: {e}") from None
    try:
        status = json.loads(out.stdout).get("status") or {}
    except (ValueError, AttributeError):
        raise ConfigError(f"{what} that printed no ExecCredential") from None
    return dict(status)


def _expiry(status: dict[str, Any]) -> float | None:
    """``expirationTimestamp`` of an ExecCredential status, as epoch seconds (None: never)."""
    value = status.get("expirationTimestamp")
    return times.parse(str(value)) if value else None


def _read(p: Path) -> dict[str, Any]:
    try:
        doc = yaml.safe_load(p.read_text()) or {}
    except OSError as e:
        raise ConfigError(f"cannot read kubeconfig {p}: {e.strerror}") from None
    except yaml.YAMLError as e:
        raise ConfigError(f"cannot parse kubeconfig {p}: {e}") from None
    if not isinstance(doc, dict):
        raise ConfigError(f"kubeconfig {p} is not a YAML mapping")
    return doc


def _resolved(section: str, item: dict[str, Any], base: Path) -> dict[str, Any]:
    """A copy of a clusters/users entry with its relative file paths made absolute."""
    if section not in _FILE_KEYS:
        return item
    field_, keys = _FILE_KEYS[section]
    body = item.get(field_)
    if not isinstance(body, dict):
        return item
    body = {**body, **{k: _path(body[k], base) for k in keys if body.get(k)}}
    return {**item, field_: body}


def _named(doc: dict[str, Any], section: str, name: Any, field_: str, where: str) -> dict[str, Any]:
    for item in doc.get(section) or ():
        if isinstance(item, dict) and item.get("name") == name:
            value = item.get(field_) or {}
            if isinstance(value, dict):
                return value
    raise ConfigError(f"{where}: {field_} {name!r} not found in {section}")


def _path(value: Any, base: Path) -> str | None:
    if not value:
        return None
    p = Path(str(value)).expanduser()
    return str(p if p.is_absolute() else base / p)


def _data(section: dict[str, Any], key: str) -> bytes | None:
    data = section.get(f"{key}-data")
    return base64.b64decode(data) if data else None


def _text(value: Any) -> bytes | None:
    return str(value).encode() if value else None


def _private_file(directory: str, name: str, content: bytes) -> str:
    """Write key or certificate bytes to a new 0600 file."""
    path = os.path.join(directory, name)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(content)
    return path
