"""Kubeconfig and in-cluster configuration, read the way kubectl reads them."""

from __future__ import annotations

import base64
import sys
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


def test_certificate_data_stays_in_memory() -> None:
    cfg = config.from_dict(
        kubeconfig(
            {
                "client-certificate-data": base64.b64encode(b"CERT").decode(),
                "client-key-data": base64.b64encode(b"KEY").decode(),
            },
            {"server": "https://x", "certificate-authority-data": base64.b64encode(b"CA").decode()},
        )
    )
    assert (cfg.client_cert_data, cfg.client_key_data, cfg.ca_data) == (b"CERT", b"KEY", b"CA")
    assert (cfg.client_cert_file, cfg.client_key_file, cfg.ca_file) == (None, None, None)
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
            kubeconfig({"exec": {"command": "/nonexistent/aws"}}),
            "uses an exec credential plugin .* that failed",
            id="an exec plugin that cannot run says so",
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


def exec_plugin(tmp_path: Path, expires: str | None) -> Obj:
    """A plugin that prints token-N, N counting its runs (in a file next to it)."""
    script = tmp_path / "plugin.py"
    status = {"token": "token-{n}"}
    if expires:
        status["expirationTimestamp"] = expires
    script.write_text(
        "import json, pathlib, sys\n"
        f"count = pathlib.Path({str(tmp_path / 'runs')!r})\n"
        "n = int(count.read_text()) + 1 if count.exists() else 1\n"
        "count.write_text(str(n))\n"
        f"status = {{k: v.format(n=n) for k, v in {status!r}.items()}}\n"
        "print(json.dumps({'kind': 'ExecCredential', 'status': status}))\n"
    )
    return {"exec": {"command": sys.executable, "args": [str(script)]}}


@pytest.mark.parametrize(
    ("expires", "tokens"),
    [
        pytest.param(None, ["token-1", "token-1"], id="a token without expiry is kept"),
        pytest.param(
            "2000-01-01T00:00:00Z",
            ["token-2", "token-3"],
            id="an expired token runs the plugin again",
        ),
    ],
)
def test_exec_plugin_tokens_are_cached_until_they_expire(
    tmp_path: Path, expires: str | None, tokens: list[str]
) -> None:
    cfg = config.from_dict(kubeconfig(exec_plugin(tmp_path, expires)))
    assert [cfg.auth_headers()["Authorization"] for _ in tokens] == [f"Bearer {t}" for t in tokens]


def test_merged_kubeconfigs_resolve_paths_next_to_the_file_that_names_them(
    tmp_path: Path,
) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    users_only = {"users": [{"name": "u", "user": {"tokenFile": "tok"}}]}
    (tmp_path / "a" / "kc").write_text(yaml.safe_dump(users_only))
    (tmp_path / "a" / "tok").write_text("from-a")
    rest = kubeconfig({"token": "ignored"}, {"server": "https://x", "certificate-authority": "ca"})
    (tmp_path / "b" / "kc").write_text(yaml.safe_dump(rest))
    cfg = config.from_files([tmp_path / "missing", tmp_path / "a" / "kc", tmp_path / "b" / "kc"])
    assert cfg.auth_headers() == {"Authorization": "Bearer from-a"}
    assert cfg.ca_file == str(tmp_path / "b" / "ca")


@pytest.mark.parametrize(
    ("api_key", "prefix", "headers"),
    [
        pytest.param({"authorization": "t"}, {}, {"Authorization": "Bearer t"}, id="a bare token"),
        pytest.param(
            {"authorization": "Bearer t"}, {}, {"Authorization": "Bearer t"}, id="a bearer header"
        ),
        pytest.param(
            {"authorization": base64.b64encode(b"me:pw").decode()},
            {"authorization": "Basic"},
            {"Authorization": "Basic " + base64.b64encode(b"me:pw").decode()},
            id="basic auth with its prefix",
        ),
    ],
)
def test_client_configurations_carry_their_credentials(
    api_key: Obj, prefix: Obj, headers: Obj
) -> None:
    class Configuration:
        host = "https://api.example/"
        ssl_ca_cert = "/etc/ca.crt"

    cc = Configuration()
    cc.api_key, cc.api_key_prefix = api_key, prefix  # type: ignore[attr-defined]
    cfg = config.from_client_configuration(cc)
    assert (cfg.server, cfg.ca_file, cfg.insecure) == ("https://api.example", "/etc/ca.crt", False)
    assert cfg.auth_headers() == headers
