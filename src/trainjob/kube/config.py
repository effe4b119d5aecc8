"""Where the apiserver is and how to authenticate: kubeconfig files and in-cluster config.

:func:`load` follows ``kubectl``'s order: an explicit kubeconfig path, else ``$KUBECONFIG`` (the
first file of the list that exists), else ``~/.kube/config``, else the in-cluster service account.
Supported credentials: bearer ``token``/``tokenFile``, client certificate and key (``-data`` or
file), basic auth, impersonation (``as``, ``as-groups``, like ``kubectl --as``); server trust from ``certificate-authority(-data)`` or
``insecure-skip-tls-verify``. ``exec`` and ``auth-provider`` plugins are not supported and say so.

Certificate data is written to a private temporary directory because :mod:`ssl` loads certificates
from files only. Used by :class:`trainjob.kube.client.Client`.
"""

from __future__ import annotations

import atexit
import base64
import os
import shutil
import ssl
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from trainjob.errors import ConfigError

SERVICE_ACCOUNT_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")
TOKEN_REFRESH_SECONDS = 60.0


@dataclass
class Config:
    """A resolved connection: server URL, TLS trust, and one set of credentials."""

    server: str
    ca_file: str | None = None
    insecure: bool = False
    tls_server_name: str | None = None
    client_cert_file: str | None = None
    client_key_file: str | None = None
    token: str | None = None
    token_file: str | None = None
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
            ctx = ssl.create_default_context(cafile=self.ca_file)
        if self.client_cert_file:
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
        return self.token


def load(kubeconfig: str | os.PathLike[str] | None = None, context: str | None = None) -> Config:
    """The connection ``kubectl`` would use (see the module docstring for the order)."""
    if kubeconfig:
        return from_kubeconfig(kubeconfig, context)
    env = os.environ.get("KUBECONFIG")
    if env:
        for part in env.split(os.pathsep):
            if part and Path(part).expanduser().is_file():
                return from_kubeconfig(Path(part).expanduser(), context)
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
    try:
        doc = yaml.safe_load(p.read_text()) or {}
    except OSError as e:
        raise ConfigError(f"cannot read kubeconfig {p}: {e.strerror}") from None
    except yaml.YAMLError as e:
        raise ConfigError(f"cannot parse kubeconfig {p}: {e}") from None
    return from_dict(doc, context, base_dir=p.parent, source=str(p))


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
    if "exec" in user or "auth-provider" in user:
        kind = "exec" if "exec" in user else "auth-provider"
        raise ConfigError(
            f"{where}: user {ctx.get('user')!r} uses an {kind} credential plugin, which trainjob "
            "does not run; use a token or a client certificate"
        )
    server = cluster.get("server")
    if not server:
        raise ConfigError(f"{where}: cluster {ctx.get('cluster')!r} has no server")
    base = base_dir or Path.cwd()
    return Config(
        server=str(server).rstrip("/"),
        ca_file=_file_or_data(cluster, "certificate-authority", base),
        insecure=bool(cluster.get("insecure-skip-tls-verify")),
        tls_server_name=cluster.get("tls-server-name"),
        client_cert_file=_file_or_data(user, "client-certificate", base),
        client_key_file=_file_or_data(user, "client-key", base),
        token=user.get("token"),
        token_file=_path(user.get("tokenFile"), base),
        username=user.get("username"),
        password=user.get("password"),
        impersonate=user.get("as"),
        impersonate_groups=tuple(user.get("as-groups") or ()),
        namespace=ctx.get("namespace") or "default",
        source=where,
    )


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


def _file_or_data(section: dict[str, Any], key: str, base: Path) -> str | None:
    data = section.get(f"{key}-data")
    if data:
        return _private_file(key, base64.b64decode(data))
    return _path(section.get(key), base)


_TMP: Path | None = None
_TMP_LOCK = threading.Lock()


def _private_file(stem: str, content: bytes) -> str:
    """Write key or certificate bytes to a 0600 file in a private temp dir removed at exit."""
    global _TMP
    with _TMP_LOCK:
        if _TMP is None:
            _TMP = Path(tempfile.mkdtemp(prefix="trainjob-kube-"))
            atexit.register(shutil.rmtree, _TMP, True)
        fd, name = tempfile.mkstemp(prefix=stem + "-", dir=_TMP)
    with os.fdopen(fd, "wb") as f:
        f.write(content)
    return name
