"""Unpacking checks the digest and every member before it writes: nothing lands outside its
target, whatever the archive holds; the init container's script is the same code."""

from __future__ import annotations

import gzip
import hashlib
import io
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from trainjob.errors import ConfigError
from trainjob.workspace import names, pack, unpack


def archive(*entries: tarfile.TarInfo, data: bytes = b"x") -> tuple[bytes, str]:
    stream = io.BytesIO()
    with tarfile.open(fileobj=stream, mode="w:") as tar:
        for info in entries:
            if info.isfile():
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
            else:
                tar.addfile(info)
    raw = stream.getvalue()
    return gzip.compress(raw), "sha256:" + hashlib.sha256(raw).hexdigest()


def entry(name: str, kind: bytes = tarfile.REGTYPE, link: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = link
    return info


def test_a_packed_folder_comes_back_as_it_was(tmp_path: Path) -> None:
    src = tmp_path / "src"
    (src / "pkg").mkdir(parents=True)
    (src / "pkg" / "m.py").write_text("X = 1\n")
    (src / "run.sh").write_text("#!/bin/sh\n")
    (src / "run.sh").chmod(0o755)
    snap = pack.pack(src)
    assert unpack.extract(snap.archive, tmp_path / "out", snap.digest) == 3
    assert (tmp_path / "out" / "pkg" / "m.py").read_text() == "X = 1\n"
    assert (tmp_path / "out" / "run.sh").stat().st_mode & 0o111


@pytest.mark.parametrize(
    ("member", "why"),
    [
        pytest.param(entry("../escape.py"), "must be a relative path", id="dot-dot"),
        pytest.param(entry("a/../../escape.py"), "must be a relative path", id="dot-dot inside"),
        pytest.param(entry("/etc/escape"), "must be a relative path", id="absolute"),
        pytest.param(entry("link", tarfile.SYMTYPE, "/etc"), "must be a file", id="symlink"),
        pytest.param(entry("hard", tarfile.LNKTYPE, "x"), "must be a file", id="hard link"),
        pytest.param(entry("dev", tarfile.CHRTYPE), "must be a file", id="device"),
    ],
)
def test_a_member_that_could_land_outside_is_refused_before_anything_is_written(
    tmp_path: Path, member: tarfile.TarInfo, why: str
) -> None:
    data, digest = archive(entry("ok.py"), member)
    dest = tmp_path / "deep" / "out"
    with pytest.raises(ConfigError, match=why):
        unpack.extract(data, dest, digest)
    assert not dest.exists() and not (tmp_path / "escape.py").exists()


def test_an_archive_that_is_not_the_one_named_is_refused(tmp_path: Path) -> None:
    data, _ = archive(entry("ok.py"))
    other = "sha256:" + "0" * 64
    with pytest.raises(ConfigError, match="it is not the one submitted"):
        unpack.extract(data, tmp_path / "out", other)
    with pytest.raises(ConfigError, match="cannot unpack"):
        unpack.extract(b"not gzip", tmp_path / "out", other)


def test_the_init_containers_script_unpacks_with_python_alone(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / "train.py").write_text("print('hi')\n")
    snap = pack.pack(src)
    (tmp_path / "a.tar.gz").write_bytes(snap.archive)
    out = subprocess.run(
        [
            sys.executable,
            "-I",
            "-c",
            names.UNPACK_SCRIPT,
            str(tmp_path / "a.tar.gz"),
            str(tmp_path / "dest"),
            snap.digest,
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout == f"workspace {snap.digest}: 1 entries unpacked into {tmp_path}/dest\n"
    assert (tmp_path / "dest" / "train.py").read_text() == "print('hi')\n"
