"""S3 objects stream in chunks: a large one shows progress before it ends, and a stop abandons it."""

from __future__ import annotations

import logging
import threading
import uuid
from pathlib import Path

import pytest

from tests.unit.initializers.conftest import S3
from trainjob.initializers import config, transfer
from trainjob.initializers.sources import s3 as s3_source


def bucket_with_object(s3: S3, size: int) -> str:
    bucket = f"stream-{uuid.uuid4().hex[:12]}"
    s3.client.create_bucket(Bucket=bucket)
    s3.client.put_object(Bucket=bucket, Key="big.bin", Body=b"x" * size)
    return bucket


def client(s3: S3, tmp_path: Path) -> object:
    cfg = config.from_env(config.Kind.DATASET, s3.env("s3://unused", tmp_path))
    return s3_source.make_client(cfg)


def test_one_large_object_shows_progress_before_it_is_done(
    s3: S3, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    size = 4 * s3_source.CHUNK
    bucket = bucket_with_object(s3, size)
    item = transfer.Item("big.bin", size)
    with caplog.at_level(logging.INFO, logger=transfer.__name__):
        progress = transfer.Progress([item], [], interval=0.0)
        s3_source.download(
            client(s3, tmp_path), bucket, "big.bin", tmp_path / "big.bin", size, progress
        )
        progress.file_done(size, counted=True)
    assert any(m.startswith("0/1 files, 1.0/4.0 MiB") for m in caplog.messages)
    assert caplog.messages[-1].startswith("1/1 files, 4.0/4.0 MiB")
    assert (tmp_path / "big.bin").stat().st_size == size


def test_a_stop_abandons_a_download_and_leaves_no_part_file(s3: S3, tmp_path: Path) -> None:
    size = 2 * s3_source.CHUNK
    bucket = bucket_with_object(s3, size)
    stop = threading.Event()
    stop.set()
    with pytest.raises(s3_source.Stopped):
        s3_source.download(
            client(s3, tmp_path), bucket, "big.bin", tmp_path / "big.bin", size, stop=stop
        )
    assert list(tmp_path.iterdir()) == []


# -- present files and partial downloads (issue 11, class 11) ---------------------------------


def _object(s3: S3, body: bytes) -> tuple[str, str]:
    bucket = f"verify-{uuid.uuid4().hex[:12]}"
    s3.client.create_bucket(Bucket=bucket)
    etag = s3.client.put_object(Bucket=bucket, Key="data.bin", Body=body)["ETag"]
    return bucket, etag


def test_a_present_file_of_the_right_size_but_wrong_content_is_fetched_again(
    s3: S3, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    body = bytes(range(256)) * 64
    bucket, _ = _object(s3, body)
    out = tmp_path / "out"
    out.mkdir()
    (out / "data.bin").write_bytes(b"\0" * len(body))  # same size, other bytes
    cfg = config.from_env(config.Kind.DATASET, s3.env(f"s3://{bucket}/data.bin", out))
    with caplog.at_level(logging.INFO):
        s3_source.fetch(cfg)
    assert (out / "data.bin").read_bytes() == body
    assert "data.bin: present with other content: downloading it again" in caplog.messages
    caplog.clear()
    with caplog.at_level(logging.INFO):
        s3_source.fetch(cfg)  # now it is the object's: kept
    assert "0 files (0.0 MiB) to download, 1 already present" in caplog.messages


def test_a_partial_download_resumes_with_a_range_request(
    s3: S3, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    body = bytes(range(256)) * (3 * s3_source.CHUNK // 256)
    bucket, etag = _object(s3, body)
    target = tmp_path / "data.bin"
    part = tmp_path / ("data.bin" + transfer.PART_SUFFIX)
    part.write_bytes(body[: s3_source.CHUNK])  # what an interrupted run got
    part.with_name(part.name + s3_source.ETAG_SUFFIX).write_text(etag)
    item = transfer.Item("data.bin", len(body), etag)
    with caplog.at_level(logging.INFO):
        progress = transfer.Progress([item], [], interval=0.0)
        s3_source.download(
            client(s3, tmp_path), bucket, "data.bin", target, len(body), progress, etag=etag
        )
    assert target.read_bytes() == body
    assert f"s3://{bucket}/data.bin: resuming at 1.0 MiB" in caplog.messages
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data.bin"]


def test_a_partial_download_of_an_object_that_changed_starts_over(
    s3: S3, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    body = b"new content " * 100_000
    bucket, etag = _object(s3, body)
    target = tmp_path / "data.bin"
    part = tmp_path / ("data.bin" + transfer.PART_SUFFIX)
    part.write_bytes(b"old content " * 10_000)
    part.with_name(part.name + s3_source.ETAG_SUFFIX).write_text(
        '"0123456789abcdef0123456789abcdef"'
    )
    with caplog.at_level(logging.INFO):
        s3_source.download(client(s3, tmp_path), bucket, "data.bin", target, len(body), etag=etag)
    assert target.read_bytes() == body


def test_a_stopped_download_with_an_etag_keeps_its_part_to_resume(s3: S3, tmp_path: Path) -> None:
    size = 2 * s3_source.CHUNK
    bucket, etag = _object(s3, b"y" * size)
    stop = threading.Event()
    stop.set()
    with pytest.raises(s3_source.Stopped):
        s3_source.download(
            client(s3, tmp_path), bucket, "data.bin", tmp_path / "data.bin", size, stop=stop,
            etag=etag,
        )  # fmt: skip
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data.bin.part", "data.bin.part.etag"]


@pytest.mark.parametrize("parts", [1, 3])
def test_etags_of_single_and_multipart_uploads_are_checked(
    s3: S3, tmp_path: Path, parts: int
) -> None:
    part_size = 5 * 1024 * 1024
    body = bytes(range(256)) * (part_size * parts // 256 - 10)
    bucket = f"multi-{uuid.uuid4().hex[:12]}"
    s3.client.create_bucket(Bucket=bucket)
    if parts == 1:
        etag = s3.client.put_object(Bucket=bucket, Key="k", Body=body)["ETag"]
    else:
        up = s3.client.create_multipart_upload(Bucket=bucket, Key="k")["UploadId"]
        done = []
        for i in range(parts):
            chunk = body[i * part_size : (i + 1) * part_size]
            tag = s3.client.upload_part(
                Bucket=bucket, Key="k", UploadId=up, PartNumber=i + 1, Body=chunk
            )["ETag"]
            done.append({"ETag": tag, "PartNumber": i + 1})
        s3.client.complete_multipart_upload(
            Bucket=bucket, Key="k", UploadId=up, MultipartUpload={"Parts": done}
        )
        etag = s3.client.head_object(Bucket=bucket, Key="k")["ETag"]
    path = tmp_path / "k"
    path.write_bytes(body)
    assert transfer.matches_etag(path, etag)
    path.write_bytes(body[:-1] + b"!")
    assert not transfer.matches_etag(path, etag)
