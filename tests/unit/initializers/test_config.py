"""Env parsing as upstream's images do it, URI schemes, and the error lines for bad env."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.unit.initializers.conftest import Run
from trainjob.initializers import command, config


def test_optional_fields_are_the_upper_cased_names_and_empty_means_unset() -> None:
    env = {
        "STORAGE_URI": " s3://b/p ",
        "ACCESS_TOKEN": "",
        "ENDPOINT": "http://minio:9000",
        "ACCESS_KEY_ID": "AKIA",
        "SECRET_ACCESS_KEY": "shh",
        "REGION": "eu-west-1",
        "ROLE_ARN": "arn:aws:iam::1:role/r",
        "IGNORE_PATTERNS": " *.bin, ,*.pt ",
    }
    cfg = config.from_env(config.Kind.DATASET, env)
    assert cfg == config.Config(
        kind=config.Kind.DATASET,
        storage_uri="s3://b/p",
        output_path="/workspace/dataset",
        ignore_patterns=("*.bin", "*.pt"),
        access_token=None,
        endpoint="http://minio:9000",
        access_key_id="AKIA",
        secret_access_key="shh",
        region="eu-west-1",
        role_arn="arn:aws:iam::1:role/r",
    )
    assert "shh" not in repr(cfg)


@pytest.mark.parametrize(
    ("kind", "env", "output", "patterns"),
    [
        pytest.param(config.Kind.DATASET, {}, "/workspace/dataset", (), id="dataset defaults"),
        pytest.param(
            config.Kind.MODEL,
            {},
            "/workspace/model",
            ("*.msgpack", "*.h5", "*.bin", "*.pt", "*.pth"),
            id="model defaults are upstream's",
        ),
        pytest.param(
            config.Kind.MODEL,
            {"IGNORE_PATTERNS": "", "OUTPUT_PATH": "/tmp/m"},
            "/tmp/m",
            (),
            id="an empty IGNORE_PATTERNS clears the model default",
        ),
    ],
)
def test_defaults(
    kind: config.Kind, env: dict[str, str], output: str, patterns: tuple[str, ...]
) -> None:
    cfg = config.from_env(kind, {"STORAGE_URI": "hf://o/r", **env})
    assert (cfg.output_path, cfg.ignore_patterns) == (output, patterns)


def test_secrets_are_masked_in_any_message() -> None:
    env = {"ACCESS_TOKEN": "hf_abc", "SECRET_ACCESS_KEY": "xyz"}
    assert command.mask("bad hf_abc and xyz", env) == "bad *** and ***"


@pytest.mark.parametrize(
    ("kind", "uri", "want"),
    [
        pytest.param(
            "dataset",
            None,
            "error: STORAGE_URI is not set: set it to the dataset to fetch, "
            "e.g. hf://org/repo, s3://bucket/prefix or file:///path",
            id="no STORAGE_URI",
        ),
        pytest.param(
            "model",
            "gs://bucket/model",
            "error: STORAGE_URI: unsupported model storage URI 'gs://bucket/model' (gs://): "
            "use hf://org/repo, s3://bucket/prefix, file:///path or an absolute path",
            id="an unsupported scheme",
        ),
        pytest.param(
            "dataset",
            "data/train",
            "error: STORAGE_URI: unsupported dataset storage URI 'data/train' (a relative path): "
            "use hf://org/repo, s3://bucket/prefix, file:///path or an absolute path",
            id="a relative path",
        ),
        pytest.param(
            "dataset",
            "hf:///org/repo",
            "error: STORAGE_URI: 'hf:///org/repo' names no repo: "
            "use hf://org/repo or hf://org/repo/path",
            id="an hf URI with no repo",
        ),
    ],
)
def test_bad_env_is_one_error_line_and_exit_1(
    run: Run, tmp_path: Path, kind: str, uri: str | None, want: str
) -> None:
    env = {"OUTPUT_PATH": str(tmp_path / "out")}
    if uri is not None:
        env["STORAGE_URI"] = uri
    proc = run(kind, env)
    assert proc.returncode == 1
    assert proc.stderr.splitlines() == [want]
    assert "Traceback" not in proc.stderr
