"""trainjob's initializer image, run as a cluster would run it: against a real S3 server.

The container runs as the image's non-root user, with the Deployment-style hardening (read-only
root filesystem, no capabilities) and a writable ``/workspace`` as an emptyDir would be, on the
host network so it reaches moto's server on loopback. The step it runs is told the way a cluster
tells it: by the pod's hostname (``<jobset>-dataset-initializer-0-0``), as upstream's two images
(which have no command) are replaced by this one image. Skipped, saying why, without podman.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests import containers
from tests.s3server import moto_s3

pytestmark = pytest.mark.e2e
KEY_ID, SECRET = "AKIAIMAGETEST", "image-test-secret-value"


@pytest.fixture(scope="module")
def initializer() -> str:
    return containers.image("initializer")


@pytest.fixture(scope="module")
def s3() -> Iterator[tuple[str, Any]]:
    pytest.importorskip("moto.server")
    with moto_s3(KEY_ID, SECRET) as server:
        yield server


def _run(image: str, workspace: Path, hostname: str, env: dict[str, str]) -> Any:
    workspace.chmod(0o777)  # an emptyDir is world-writable
    args = ["run", "--rm", "--network", "host", "--read-only", "--cap-drop", "ALL",
            "--security-opt", "no-new-privileges", "--tmpfs", "/tmp", "--hostname", hostname,
            "-v", f"{workspace}:/workspace"]  # fmt: skip
    for k in env:
        args += ["-e", k]
    return subprocess.run(
        ["podman", *args, image],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **env},
    )


def test_the_image_is_small_non_root_and_runs_the_initializers(initializer: str) -> None:
    cfg = containers.image_config(initializer)
    assert cfg["User"] == "65532:65532"
    assert cfg["Cmd"] == ["python", "-m", "trainjob.initializers"]
    size = int(containers.podman("image", "inspect", "--format", "{{.Size}}", initializer).stdout)
    assert size < 400 * 1000**2, f"{size / 1e6:.0f} MB"


def test_the_dataset_step_downloads_an_s3_prefix_into_the_workspace(
    initializer: str, s3: tuple[str, Any], tmp_path: Path
) -> None:
    endpoint, client = s3
    client.create_bucket(Bucket="data")
    client.put_object(Bucket="data", Key="sets/tiny/train.jsonl", Body=b'{"text": "hi"}\n')
    client.put_object(Bucket="data", Key="sets/tiny/sub/eval.jsonl", Body=b'{"text": "yo"}\n')
    env = {"STORAGE_URI": "s3://data/sets/tiny", "ENDPOINT": endpoint, "ACCESS_KEY_ID": KEY_ID,
           "SECRET_ACCESS_KEY": SECRET, "REGION": "us-east-1"}  # fmt: skip
    proc = _run(initializer, tmp_path, "job-dataset-initializer-0-0", env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    got = tmp_path / "dataset"
    assert (got / "train.jsonl").read_bytes() == b'{"text": "hi"}\n'
    assert (got / "sub" / "eval.jsonl").read_bytes() == b'{"text": "yo"}\n'
    assert (got / "train.jsonl").stat().st_uid != 0, "written by the image's non-root user"
    assert SECRET not in proc.stdout + proc.stderr, "the secret is never logged"


def test_the_model_step_is_told_by_the_pods_hostname_and_bad_input_is_one_line(
    initializer: str, s3: tuple[str, Any], tmp_path: Path
) -> None:
    endpoint, client = s3
    client.create_bucket(Bucket="models")
    client.put_object(Bucket="models", Key="tiny/config.json", Body=b"{}")
    env = {"STORAGE_URI": "s3://models/tiny", "ENDPOINT": endpoint, "ACCESS_KEY_ID": KEY_ID,
           "SECRET_ACCESS_KEY": SECRET}  # fmt: skip
    proc = _run(initializer, tmp_path, "job-model-initializer-0-0", env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (tmp_path / "model" / "config.json").read_bytes() == b"{}"
    bad = _run(initializer, tmp_path, "job-model-initializer-0-0", {"STORAGE_URI": "ftp://x"})
    assert bad.returncode != 0
    assert "Traceback" not in bad.stdout + bad.stderr
    assert "STORAGE_URI" in bad.stdout + bad.stderr
