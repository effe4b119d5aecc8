"""A workspace archive in S3, against a real S3-compatible server (moto's): put once under its
digest, got back and unpacked by the init container's script (its own Signature V4 GET, the same
signature botocore computes), and one-line errors that name the setting to fix, never a secret."""

from __future__ import annotations

import datetime
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from trainjob.errors import ConfigError
from trainjob.workspace import names, pack, s3, unpack

KEY, SECRET = "workspace-key", "workspace-secret-value"


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[str, Any]]:
    pytest.importorskip("boto3")
    pytest.importorskip("moto.server")
    from tests.s3server import moto_s3

    with moto_s3(KEY, SECRET) as (endpoint, client):
        client.create_bucket(Bucket="code")
        yield endpoint, client


def init_container(
    uri: str, dest: Path, digest: str, env: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    """The init container's command, with only python and the trainer's env."""
    return subprocess.run(
        [sys.executable, "-I", "-c", names.UNPACK_SCRIPT, uri, str(dest), digest],
        env={"PATH": os.environ.get("PATH", ""), **env},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def settings(endpoint: str, secret: str = SECRET) -> dict[str, str]:
    return {"ENDPOINT": endpoint, "ACCESS_KEY_ID": KEY, "SECRET_ACCESS_KEY": secret}


def snapshot(tmp_path: Path) -> pack.Snapshot:
    (tmp_path / "src" / "mylib").mkdir(parents=True)
    (tmp_path / "src" / "mylib" / "__init__.py").write_text("X = 1\n")
    return pack.pack(tmp_path / "src")


def test_the_archive_is_put_once_under_its_digest_and_unpacked_from_there(
    tmp_path: Path, server: tuple[str, Any]
) -> None:
    endpoint, client = server
    snap = snapshot(tmp_path)
    uri = s3.object_uri("s3://code/jobs/", snap.digest)
    assert uri == f"s3://code/jobs/{snap.digest.split(':')[1]}.tar.gz"
    assert s3.put(uri, snap.archive, snap.digest, settings(endpoint)) is True
    assert s3.put(uri, snap.archive, snap.digest, settings(endpoint)) is False  # there already
    body = client.get_object(Bucket="code", Key=uri.removeprefix("s3://code/"))["Body"].read()
    assert body == snap.archive
    out = init_container(uri, tmp_path / "dest", snap.digest, settings(endpoint))
    assert out.returncode == 0, out.stderr
    assert out.stdout == f"workspace {snap.digest}: 2 entries unpacked into {tmp_path}/dest\n"
    assert (tmp_path / "dest" / "mylib" / "__init__.py").read_text() == "X = 1\n"


def test_a_missing_bucket_is_one_line_naming_the_setting_and_never_the_secret(
    tmp_path: Path, server: tuple[str, Any]
) -> None:
    endpoint, _ = server
    snap = snapshot(tmp_path)
    uri = s3.object_uri("s3://no-such-bucket/jobs", snap.digest)
    with pytest.raises(ConfigError) as e:
        s3.put(uri, snap.archive, snap.digest, settings(endpoint))
    message = str(e.value)
    assert message.startswith(f"workspace {uri}: ") and "'no-such-bucket' does not exist" in message
    assert SECRET not in message and "\n" not in message


def test_a_missing_object_fails_the_init_container_in_one_line(
    tmp_path: Path, server: tuple[str, Any]
) -> None:
    endpoint, _ = server
    digest = "sha256:" + "0" * 64
    uri = s3.object_uri("s3://code/none", digest)
    out = init_container(uri, tmp_path / "d", digest, settings(endpoint))
    assert out.returncode == 1
    [line] = out.stderr.splitlines()
    assert line.startswith(f"error: workspace {digest}: GET {uri}: 404 ") and SECRET not in line
    assert not (tmp_path / "d").exists()


def test_the_scripts_signature_is_botocores() -> None:
    from botocore.auth import S3SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    now = datetime.datetime(2026, 12, 4, 1, 2, 3, tzinfo=datetime.UTC)
    env = {**settings("http://127.0.0.1:9000"), "REGION": "eu-west-1", "AWS_SESSION_TOKEN": "tok"}
    request = unpack.script()["s3_request"]
    assert callable(request)
    url, headers = request("s3://code/jobs/a b+c.tar.gz", env, now)
    assert url == "http://127.0.0.1:9000/code/jobs/a%20b%2Bc.tar.gz"
    theirs = AWSRequest(method="GET", url=url, headers={k: v for k, v in headers.items()
                                                          if k != "Authorization"})  # fmt: skip
    theirs.context["timestamp"] = now.strftime("%Y%m%dT%H%M%SZ")
    auth = S3SigV4Auth(Credentials(KEY, SECRET, "tok"), "s3", "eu-west-1")
    signature = auth.signature(auth.string_to_sign(theirs, auth.canonical_request(theirs)), theirs)
    assert headers["Authorization"].endswith(f"Signature={signature}")
    assert f"Credential={KEY}/20261204/eu-west-1/s3/aws4_request" in headers["Authorization"]
    assert request("s3://code/k", {}, now) == ("https://code.s3.us-east-1.amazonaws.com/k", {})


def test_a_storage_uri_that_is_not_s3_is_refused() -> None:
    with pytest.raises(ConfigError, match="must be s3://bucket or s3://bucket/prefix"):
        s3.object_uri("gs://code", "sha256:" + "0" * 64)


def test_an_archive_too_large_for_a_configmap_goes_under_the_runtimes_prefix(
    tmp_path: Path, server: tuple[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.unit.helpers import builtin
    from trainjob.cluster import workspaces

    endpoint, client = server
    for name, value in settings(endpoint).items():
        monkeypatch.setenv(name, value)
    (tmp_path / "big").mkdir()
    (tmp_path / "big" / "noise.bin").write_bytes(os.urandom(names.CONFIGMAP_LIMIT + 1))
    snap = pack.pack(tmp_path / "big")
    runtime = builtin("torch-distributed").model_copy(deep=True)  # the cached one stays as is
    assert workspaces.runtime_uri(runtime) is None
    runtime.metadata.annotations = {names.URI: "s3://code/runtime-prefix"}
    job: dict[str, Any] = {"metadata": {"name": "t", "annotations": snap.annotations()}}
    workspaces.before_create(job, snap, lambda: workspaces.runtime_uri(runtime))
    uri = job["metadata"]["annotations"][names.URI]
    assert uri == s3.object_uri("s3://code/runtime-prefix", snap.digest)
    body = client.get_object(Bucket="code", Key=uri.removeprefix("s3://code/"))["Body"].read()
    assert body == snap.archive
