"""Kubeconfig and in-cluster configuration, read the way kubectl reads them."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest
import yaml

from trainjob.errors import ConfigError
from trainjob.kube import config

Obj = dict[str, Any]


def kubeconfig(user: Obj, cluster: Obj | None = None, namespace: str | None = None) -> Obj:
    ctx: Obj = {"cluster": "c", "user": "u"}
    if namespace:
        ctx["namespace"] = namespace
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": "main",
        "contexts": [
            {"name": "main", "context": ctx},
            {"name": "other", "context": {"cluster": "c2"}},
        ],
        "clusters": [
            {"name": "c", "cluster": cluster or {"server": "https://10.0.0.1:6443/"}},
            {
                "name": "c2",
                "cluster": {"server": "https://other:443", "insecure-skip-tls-verify": True},
            },
        ],
        "users": [{"name": "u", "user": user}],
    }


def test_token_user_gets_a_bearer_header_and_the_context_namespace() -> None:
    cfg = config.from_dict(kubeconfig({"token": "abc"}, namespace="team"))
    assert cfg.server == "https://10.0.0.1:6443"
    assert cfg.auth_headers() == {"Authorization": "Bearer abc"}
    assert cfg.namespace == "team"


def test_certificate_data_is_written_to_private_files(tmp_path: Path) -> None:
    cfg = config.from_dict(
        kubeconfig(
            {
                "client-certificate-data": base64.b64encode(b"CERT").decode(),
                "client-key-data": base64.b64encode(b"KEY").decode(),
            },
            {"server": "https://x", "certificate-authority-data": base64.b64encode(b"CA").decode()},
        )
    )
    assert cfg.client_cert_file and Path(cfg.client_cert_file).read_bytes() == b"CERT"
    assert cfg.client_key_file and Path(cfg.client_key_file).read_bytes() == b"KEY"
    assert Path(cfg.client_key_file).stat().st_mode & 0o077 == 0
    assert cfg.ca_file and Path(cfg.ca_file).read_bytes() == b"CA"
    assert cfg.auth_headers() == {}


def test_relative_files_are_relative_to_the_kubeconfig(tmp_path: Path) -> None:
    (tmp_path / "kc").write_text(
        yaml.safe_dump(
            kubeconfig(
                {"tokenFile": "tok"}, {"server": "https://x", "certificate-authority": "ca.crt"}
            )
        )
    )
    (tmp_path / "tok").write_text("from-file\n")
    cfg = config.load(str(tmp_path / "kc"))
    assert cfg.ca_file == str(tmp_path / "ca.crt")
    assert cfg.auth_headers() == {"Authorization": "Bearer from-file"}


def test_another_context_can_be_chosen() -> None:
    cfg = config.from_dict(kubeconfig({"token": "abc"}), context="other")
    assert cfg.server == "https://other:443" and cfg.insecure and cfg.auth_headers() == {}


def test_basic_auth() -> None:
    cfg = config.from_dict(kubeconfig({"username": "me", "password": "pw"}))
    assert cfg.auth_headers() == {"Authorization": "Basic " + base64.b64encode(b"me:pw").decode()}


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        pytest.param(
            kubeconfig({"exec": {"command": "aws"}}),
            "uses an exec credential plugin",
            id="exec plugins are refused with a reason",
        ),
        pytest.param(
            {**kubeconfig({}), "current-context": "missing"},
            "context 'missing' not found in contexts",
            id="an unknown context is named",
        ),
        pytest.param(
            {**kubeconfig({}), "current-context": None},
            "no context given and no current-context set",
            id="no current context",
        ),
        pytest.param(
            kubeconfig({}, {"certificate-authority": "x"}),
            "has no server",
            id="a cluster without a server",
        ),
    ],
)
def test_bad_kubeconfigs_raise_config_errors(doc: Obj, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        config.from_dict(doc)


def test_in_cluster_reads_the_service_account(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "token").write_text("sa-token")
    (tmp_path / "namespace").write_text("trainjob-system")
    (tmp_path / "ca.crt").write_text("CA")
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")
    cfg = config.in_cluster(tmp_path)
    assert cfg.server == "https://10.96.0.1:443"
    assert cfg.namespace == "trainjob-system"
    assert cfg.ca_file == str(tmp_path / "ca.crt")
    assert cfg.auth_headers() == {"Authorization": "Bearer sa-token"}


def test_load_without_any_configuration_says_what_to_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    with pytest.raises(ConfigError, match="no Kubernetes configuration: pass --kubeconfig"):
        config.load()
