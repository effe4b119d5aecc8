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
