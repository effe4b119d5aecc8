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


def test_trainjob_backend_container_is_the_container_backend(home: Path) -> None:
    cfg = config.default_backend_config({"HOME": str(home), "TRAINJOB_BACKEND": "container"})
    assert isinstance(cfg, config.ContainerBackendConfig)


def test_container_backend_config_has_upstreams_fields_and_checks_them() -> None:
    cfg = config.ContainerBackendConfig(
        pull_policy="Never",
        auto_remove=True,
        container_host="unix:///run/podman.sock",
        container_runtime="podman",
        env={"A": "1"},
        volumes={"/data": {"bind": "/mnt/data", "mode": "ro"}},
        dataset_initializer_image="img:1",
        model_initializer_image="img:2",
        initializer_timeout=60,
    )
    assert cfg.runtime_source.sources == ["github://kubeflow/trainer"]
    assert cfg.namespace == "default"
    for bad in ({"pull_policy": "Sometimes"}, {"container_runtime": "lxc"},
                {"initializer_timeout": 0}, {"unknown": 1}):  # fmt: skip
        with pytest.raises(ValueError):
            config.ContainerBackendConfig(**bad)


def test_container_settings_follow_the_config(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Upstream's fields become the executor's container settings (the engine lookup, which runs
    podman or docker, is replaced here by a fixed answer; tests/e2e runs the real one)."""
    from trainjob.client.backends import container
    from trainjob.local.job.containers import engine
    from trainjob.local.job.containers.engine import Engine

    monkeypatch.setattr(engine, "detect", lambda runtime, host: Engine("/usr/bin/podman"))
    cfg = config.ContainerBackendConfig(
        volumes={"/data": {"bind": "/mnt/data", "mode": "ro"}, "/out": {"bind": "/out"}},
        dataset_initializer_image="init:1",
        images={"a:1": "b:2"},
        auto_remove=False,
    )
    with caplog.at_level(logging.WARNING):
        s = container.settings_of(cfg)
    assert s.engine == "/usr/bin/podman" and s.pull_policy == "IfNotPresent"
    assert [(m.source, m.target, m.read_only) for m in s.mounts] == [
        ("/data", "/mnt/data", True),
        ("/out", "/out", False),
    ]
    assert dict(s.step_images) == {"dataset-initializer": "init:1"}
    assert dict(s.images) == {"a:1": "b:2"} and s.initializer_timeout == 600
    assert "auto_remove=False" in caplog.text
    with pytest.raises(ValueError, match=r"volumes\['/x'\] needs a 'bind'"):
        container.settings_of(config.ContainerBackendConfig(volumes={"/x": {"mode": "ro"}}))
    with pytest.raises(ValueError, match=r"\['mode'\] must be 'rw' or 'ro'"):
        container.settings_of(
            config.ContainerBackendConfig(volumes={"/x": {"bind": "/y", "mode": "rx"}})
        )


def test_no_container_engine_is_a_config_error_that_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from trainjob.errors import ConfigError
    from trainjob.local.job.containers import engine

    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(ConfigError, match="needs docker or podman") as err:
        engine.detect(None)
    assert "apt-get install podman runc" in str(err.value)
    with pytest.raises(ConfigError, match="container runtime must be docker or podman"):
        engine.detect("lxc")
