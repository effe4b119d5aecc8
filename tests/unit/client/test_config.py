"""Which backend TrainerClient uses when none is given, and why it says so."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from trainjob.client import config


@pytest.fixture
def home(tmp_path: Path) -> Path:
    h = tmp_path / "home"
    h.mkdir()
    return h


def kubeconfig(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("apiVersion: v1\nkind: Config\n")
    return path


@pytest.mark.parametrize(
    ("setup", "want", "reason"),
    [
        pytest.param(lambda h, sa: {}, "local", "no kubeconfig", id="nothing configured is local"),
        pytest.param(
            lambda h, sa: {"KUBECONFIG": str(kubeconfig(h / "k.yaml"))},
            "kubernetes",
            "k.yaml",
            id="KUBECONFIG naming a file is kubernetes",
        ),
        pytest.param(
            lambda h, sa: {"KUBECONFIG": str(h / "missing.yaml")},
            "local",
            "no kubeconfig",
            id="KUBECONFIG naming no file is local",
        ),
        pytest.param(
            lambda h, sa: (kubeconfig(h / ".kube" / "config"), {})[1],
            "kubernetes",
            ".kube/config",
            id="a ~/.kube/config file is kubernetes",
        ),
        pytest.param(
            lambda h, sa: ((sa / "token").write_text("t"), {"KUBERNETES_SERVICE_HOST": "10.0.0.1"})[
                1
            ],
            "kubernetes",
            "in-cluster",
            id="a pod with a service account is kubernetes",
        ),
        pytest.param(
            lambda h, sa: {"KUBERNETES_SERVICE_HOST": "10.0.0.1"},
            "local",
            "no kubeconfig",
            id="a service host without a token is local",
        ),
        pytest.param(
            lambda h, sa: {
                "TRAINJOB_BACKEND": "local",
                "KUBECONFIG": str(kubeconfig(h / "k.yaml")),
            },
            "local",
            "TRAINJOB_BACKEND=local",
            id="TRAINJOB_BACKEND=local wins over a kubeconfig",
        ),
        pytest.param(
            lambda h, sa: {"TRAINJOB_BACKEND": "Kubernetes"},
            "kubernetes",
            "TRAINJOB_BACKEND=kubernetes",
            id="TRAINJOB_BACKEND=kubernetes forces kubernetes",
        ),
    ],
)
def test_default_backend_rule(
    home: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture, setup: Any, want: str, reason: str
) -> None:
    sa = tmp_path / "sa"
    sa.mkdir()
    env = {"HOME": str(home), **setup(home, sa)}
    with caplog.at_level(logging.INFO, logger="trainjob.client.config"):
        cfg = config.default_backend_config(env, sa_dir=sa)
    kind = "kubernetes" if isinstance(cfg, config.KubernetesBackendConfig) else "local"
    assert kind == want
    assert f"TrainerClient backend: {want}" in caplog.text
    assert reason in caplog.text


def test_an_unknown_forced_backend_is_refused(home: Path) -> None:
    with pytest.raises(ValueError, match="'docker' is not a backend"):
        config.default_backend_config({"HOME": str(home), "TRAINJOB_BACKEND": "docker"})


def test_local_backend_config_alias_and_upstream_fields() -> None:
    cfg = config.LocalBackendConfig(cleanup_venv=False, env={"A": "1"})
    assert isinstance(cfg, config.LocalProcessBackendConfig)
    assert cfg.env == {"A": "1"}
    with pytest.raises(ValueError):
        config.LocalProcessBackendConfig(unknown=1)  # type: ignore[call-arg]


def test_trainer_client_refuses_an_unknown_config() -> None:
    from trainjob import TrainerClient

    with pytest.raises(ValueError, match="Invalid backend config"):
        TrainerClient(backend_config="local")  # type: ignore[arg-type]


def test_the_client_names_its_backend(tmp_path: Path) -> None:
    from trainjob import TrainerClient

    client = TrainerClient(config.LocalBackendConfig(home=tmp_path / "h", namespace="team"))
    assert repr(client) == "TrainerClient(backend='local', namespace='team')"


def test_an_unusable_kubeconfig_picked_by_the_default_rule_says_how_to_run_locally(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from trainjob import TrainerClient
    from trainjob.errors import ConfigError

    kubeconfig(home / ".kube" / "config")  # exists, but has no current context
    monkeypatch.setenv("HOME", str(home))
    for var in ("KUBECONFIG", "TRAINJOB_BACKEND", "KUBERNETES_SERVICE_HOST"):
        monkeypatch.delenv(var, raising=False)
    with pytest.raises(ConfigError, match="set TRAINJOB_BACKEND=local") as err:
        TrainerClient()
    assert "current-context" in str(err.value)
    # asked for explicitly: the error is the kubeconfig's alone
    with pytest.raises(ConfigError) as err:
        TrainerClient(config.KubernetesBackendConfig())
    assert "TRAINJOB_BACKEND" not in str(err.value)
