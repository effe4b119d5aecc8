"""A workspace archive in S3, against a real S3-compatible server (moto's): put once under its
digest, got back and unpacked by the init container's module, and one-line errors that name the
setting to fix and never a secret."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from trainjob.errors import ConfigError
from trainjob.workspace import fetch, pack, s3

KEY, SECRET = "workspace-key", "workspace-secret-value"


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[str, Any]]:
    pytest.importorskip("boto3")
    pytest.importorskip("moto.server")
    from tests.s3server import moto_s3

    with moto_s3(KEY, SECRET) as (endpoint, client):
        client.create_bucket(Bucket="code")
        yield endpoint, client


def settings(endpoint: str, secret: str = SECRET) -> dict[str, str]:
    return {"ENDPOINT": endpoint, "ACCESS_KEY_ID": KEY, "SECRET_ACCESS_KEY": secret}


def snapshot(tmp_path: Path) -> pack.Snapshot:
    (tmp_path / "src" / "mylib").mkdir(parents=True)
    (tmp_path / "src" / "mylib" / "__init__.py").write_text("X = 1\n")
    return pack.pack(tmp_path / "src")


def test_the_archive_is_put_once_under_its_digest_and_unpacked_from_there(
    tmp_path: Path, server: tuple[str, Any], monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    endpoint, client = server
    snap = snapshot(tmp_path)
    uri = s3.object_uri("s3://code/jobs/", snap.digest)
    assert uri == f"s3://code/jobs/{snap.digest.split(':')[1]}.tar.gz"
    assert s3.put(uri, snap.archive, snap.digest, settings(endpoint)) is True
    assert s3.put(uri, snap.archive, snap.digest, settings(endpoint)) is False  # there already
    body = client.get_object(Bucket="code", Key=uri.removeprefix("s3://code/"))["Body"].read()
    assert body == snap.archive
    for name, value in settings(endpoint).items():
        monkeypatch.setenv(name, value)
    assert fetch.main([uri, str(tmp_path / "dest"), snap.digest]) == 0
    assert (tmp_path / "dest" / "mylib" / "__init__.py").read_text() == "X = 1\n"
    assert capsys.readouterr().err == ""


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
    tmp_path: Path, server: tuple[str, Any], monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    endpoint, _ = server
    for name, value in settings(endpoint).items():
        monkeypatch.setenv(name, value)
    digest = "sha256:" + "0" * 64
    assert fetch.main([s3.object_uri("s3://code/none", digest), str(tmp_path / "d"), digest]) == 1
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith("error: workspace s3://code/none/") and SECRET not in line


def test_a_storage_uri_that_is_not_s3_is_refused() -> None:
    with pytest.raises(ConfigError, match="must be s3://bucket or s3://bucket/prefix"):
        s3.object_uri("gs://code", "sha256:" + "0" * 64)
