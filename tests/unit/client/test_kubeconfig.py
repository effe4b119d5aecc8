"""Reading kubeconfig files and in-cluster config without the ``kubernetes`` package: the
SDK's kubernetes backend through :mod:`trainjob.kube.config`."""

from __future__ import annotations

import base64
import datetime
import os
import ssl
import stat
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from trainjob.client.backends.kubernetes import kube_config
from trainjob.client.config import KubernetesBackendConfig
from trainjob.errors import ConfigError
from trainjob.kube import config as kubeconfig


def self_signed() -> tuple[bytes, bytes]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "test")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(1)
        .not_valid_before(now)
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    pem_key = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return cert.public_bytes(serialization.Encoding.PEM), pem_key


def write(
    path: Path,
    users: dict[str, Any],
    cluster: dict[str, Any] | None = None,
    context_ns: str = "ml",
    current: str = "ctx",
) -> Path:
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": current,
        "clusters": [{"name": "c", "cluster": cluster or {"server": "https://10.1.2.3:6443/"}}],
        "users": [{"name": "u", "user": users}],
        "contexts": [
            {"name": "ctx", "context": {"cluster": "c", "user": "u", "namespace": context_ns}},
            {"name": "other", "context": {"cluster": "c", "user": "u"}},
        ],
    }
    path.write_text(yaml.safe_dump(doc))
    return path


def test_token_ca_data_and_namespace_from_the_current_context(tmp_path: Path) -> None:
    cert, _ = self_signed()
    path = write(
        tmp_path / "config",
        {"token": "secret-token"},
        {
            "server": "https://10.1.2.3:6443/",
            "certificate-authority-data": base64.b64encode(cert).decode(),
        },
    )
    conn = kubeconfig.from_kubeconfig(str(path))
    assert conn.server == "https://10.1.2.3:6443"
    assert conn.namespace == "ml"
    verify = conn.ssl_context()
    assert isinstance(verify, ssl.SSLContext)
    assert verify.get_ca_certs()[0]["subject"] == ((("commonName", "test"),),)
    assert conn.auth_headers() == {"Authorization": "Bearer secret-token"}


def test_client_certificate_data_is_loaded_and_no_key_file_is_left_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cert, key = self_signed()
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)
    path = write(
        tmp_path / "config",
        {
            "client-certificate-data": base64.b64encode(cert).decode(),
            "client-key-data": base64.b64encode(key).decode(),
        },
        {"server": "https://x:6443", "insecure-skip-tls-verify": False},
    )
    conn = kubeconfig.from_kubeconfig(str(path), context="other")
    assert isinstance(conn.ssl_context(), ssl.SSLContext)
    assert conn.namespace == "default"
    assert conn.auth_headers() == {}
    assert list((tmp_path / "tmp").iterdir()) == []


def test_relative_files_resolve_next_to_the_kubeconfig_and_token_files_are_reread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(kubeconfig, "TOKEN_REFRESH_SECONDS", -1.0)  # re-read on every request
    cert, _key = self_signed()
    (tmp_path / "ca.crt").write_bytes(cert)
    (tmp_path / "token").write_text("one\n")
    path = write(
        tmp_path / "config",
        {"tokenFile": "token"},
        {"server": "https://x", "certificate-authority": "ca.crt"},
    )
    conn = kubeconfig.from_kubeconfig(str(path))
    assert conn.auth_headers()["Authorization"] == "Bearer one"
    (tmp_path / "token").write_text("two\n")
    assert conn.auth_headers()["Authorization"] == "Bearer two"


def test_insecure_and_basic_auth(tmp_path: Path) -> None:
    path = write(
        tmp_path / "config",
        {"username": "admin", "password": "pw"},
        {"server": "https://x", "insecure-skip-tls-verify": True},
    )
    conn = kubeconfig.from_kubeconfig(str(path))
    assert conn.insecure is True
    assert conn.ssl_context().verify_mode == ssl.CERT_NONE
    assert conn.auth_headers() == {
        "Authorization": "Basic " + base64.b64encode(b"admin:pw").decode()
    }


def test_exec_plugin_token_without_a_shell(tmp_path: Path) -> None:
    plugin = tmp_path / "plugin.py"
    plugin.write_text(
        "import json, os, sys\n"
        "print(json.dumps({'kind': 'ExecCredential', 'status': {'token': sys.argv[1] + os.environ['X']}}))\n"
    )
    path = write(
        tmp_path / "config",
        {
            "exec": {
                "apiVersion": "client.authentication.k8s.io/v1",
                "command": sys.executable,
                "args": [str(plugin), "tok;$(id)"],
                "env": [{"name": "X", "value": "-suffix"}],
            }
        },
        {"server": "https://x", "insecure-skip-tls-verify": True},
    )
    conn = kubeconfig.from_kubeconfig(str(path))
    assert conn.auth_headers() == {"Authorization": "Bearer tok;$(id)-suffix"}


@pytest.mark.parametrize(
    ("users", "current", "fragment"),
    [
        pytest.param(
            {"token": "t"},
            "missing",
            "context 'missing' not found in contexts",
            id="an unknown context",
        ),
        pytest.param(
            {"auth-provider": {"name": "gcp"}},
            "ctx",
            "auth-provider plugins are not supported",
            id="auth-provider plugins",
        ),
    ],
)
def test_unusable_kubeconfigs_say_why(
    tmp_path: Path, users: dict[str, Any], current: str, fragment: str
) -> None:
    path = write(tmp_path / "config", users, current=current)
    with pytest.raises(ConfigError, match=fragment):
        kubeconfig.from_kubeconfig(str(path))


def test_no_kubeconfig_at_all(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "none"))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    with pytest.raises(ConfigError, match="no kubeconfig found"):
        kube_config(KubernetesBackendConfig())


def test_kubeconfig_list_merges_first_wins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    a = write(tmp_path / "a", {"token": "from-a"})
    b = write(tmp_path / "b", {"token": "from-b"}, current="other")
    monkeypatch.setenv("KUBECONFIG", f"{a}{os.pathsep}{b}")
    conn = kube_config(KubernetesBackendConfig(namespace="forced"))
    assert conn.auth_headers()["Authorization"] == "Bearer from-a"
    assert conn.namespace == "forced"


def test_in_cluster_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cert, _ = self_signed()
    (tmp_path / "token").write_text("sa-token")
    (tmp_path / "namespace").write_text("jobs\n")
    (tmp_path / "ca.crt").write_bytes(cert)
    os.chmod(tmp_path / "token", stat.S_IRUSR)
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")
    conn = kubeconfig.in_cluster(tmp_path)
    assert (conn.server, conn.namespace) == ("https://10.96.0.1:443", "jobs")
    assert conn.auth_headers() == {"Authorization": "Bearer sa-token"}


def test_a_kubernetes_client_configuration_is_accepted_by_duck_typing() -> None:
    class Configuration:
        host = "https://api.example:443"
        api_key = {"authorization": "abc"}
        api_key_prefix = {"authorization": "Bearer"}
        verify_ssl = False

    conn = kube_config(KubernetesBackendConfig(client_configuration=Configuration(), namespace="n"))
    assert (conn.server, conn.namespace, conn.insecure) == ("https://api.example:443", "n", True)
    assert conn.auth_headers() == {"Authorization": "Bearer abc"}
