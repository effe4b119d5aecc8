"""Packing a folder: what goes in (``.gitignore``, excludes, links inside), the same bytes for the
same content, and a one-line error for each bad folder (missing, a link out, too large,
unreadable)."""

from __future__ import annotations

import gzip
import io
import os
import tarfile
from collections.abc import Callable
from pathlib import Path

import pytest

from trainjob.errors import ConfigError
from trainjob.workspace import names, pack


def project(root: Path) -> Path:
    (root / "mylib").mkdir(parents=True)
    (root / "train.py").write_text("import mylib\n")
    (root / "mylib" / "__init__.py").write_text("X = 1\n")
    (root / "run.sh").write_text("#!/bin/sh\n")
    (root / "run.sh").chmod(0o755)
    return root


def members(snap: pack.Snapshot) -> dict[str, tarfile.TarInfo]:
    with tarfile.open(fileobj=io.BytesIO(gzip.decompress(snap.archive))) as tar:
        return {m.name: m for m in tar.getmembers()}


def test_the_same_content_gives_the_same_archive_and_digest_whatever_the_times(
    tmp_path: Path,
) -> None:
    a, b = project(tmp_path / "a"), project(tmp_path / "b")
    os.utime(b / "train.py", (1, 1))
    first, second = pack.pack(a), pack.pack(b)
    assert first.digest == second.digest and first.archive == second.archive
    assert names.DIGEST_RE.match(first.digest)
    (b / "train.py").write_text("import mylib  # changed\n")
    assert pack.pack(b).digest != first.digest


def test_files_keep_their_executable_bit_and_nothing_else_of_the_host(tmp_path: Path) -> None:
    got = members(pack.pack(project(tmp_path / "p")))
    assert sorted(got) == ["mylib", "mylib/__init__.py", "run.sh", "train.py"]
    assert got["run.sh"].mode == 0o755 and got["train.py"].mode == 0o644
    assert {(m.uid, m.gid, m.mtime, m.uname) for m in got.values()} == {(0, 0, 0, "")}


def test_gitignore_files_each_below_their_folder_the_exclude_list_and_git_are_left_out(
    tmp_path: Path,
) -> None:
    root = project(tmp_path / "p")
    (root / ".gitignore").write_text("data/\n*.ckpt\n!keep.ckpt\n")
    (root / "data").mkdir()
    (root / "data" / "big.bin").write_text("x")
    (root / "model.ckpt").write_text("x")
    (root / "keep.ckpt").write_text("x")
    (root / "mylib" / ".gitignore").write_text("generated.py\n")
    (root / "mylib" / "generated.py").write_text("x")
    (root / "generated.py").write_text("kept: the rule is mylib's")
    (root / ".git").mkdir()
    (root / ".git" / "HEAD").write_text("ref")
    (root / "mylib" / "__pycache__").mkdir()
    (root / "mylib" / "__pycache__" / "x.pyc").write_text("x")
    (root / "notes.txt").write_text("x")
    got = members(pack.pack(root, exclude=["notes.txt"]))
    assert sorted(got) == [
        ".gitignore",
        "generated.py",
        "keep.ckpt",
        "mylib",
        "mylib/.gitignore",
        "mylib/__init__.py",
        "run.sh",
        "train.py",
    ]


def test_a_link_inside_the_folder_is_packed_as_what_it_points_to(tmp_path: Path) -> None:
    root = project(tmp_path / "p")
    (root / "alias.py").symlink_to("train.py")
    (root / "lib2").symlink_to("mylib")
    (root / "mylib" / "loop").symlink_to("..")
    got = members(pack.pack(root))
    assert got["alias.py"].isfile() and got["lib2/__init__.py"].isfile()
    assert not any(m.issym() or m.islnk() for m in got.values())
    assert "mylib/loop" not in got  # a link back up the tree is not entered again


def test_a_link_out_of_the_folder_is_refused_in_one_line_naming_it(tmp_path: Path) -> None:
    root = project(tmp_path / "p")
    (tmp_path / "secret.txt").write_text("token")
    (root / "mylib" / "creds").symlink_to(tmp_path / "secret.txt")
    with pytest.raises(ConfigError) as e:
        pack.pack(root)
    assert str(e.value) == (
        f"workspace {root}: mylib/creds: a symlink out of the folder (to {tmp_path}/secret.txt):"
        " remove it, or exclude it (.gitignore, --workdir-exclude)"
    )
    assert "token" not in str(e.value)
    assert pack.pack(root, exclude=["creds"]).files == 3  # excluded: never followed


@pytest.mark.parametrize(
    ("make", "message"),
    [
        pytest.param(lambda p: None, "no such folder", id="a missing folder"),
        pytest.param(lambda p: p.write_text("x"), "not a folder", id="a file"),
    ],
)
def test_a_folder_that_is_not_one_is_a_one_line_error(
    tmp_path: Path, make: Callable[[Path], object], message: str
) -> None:
    path = tmp_path / "src"
    make(path)
    with pytest.raises(ConfigError, match=f"^workspace {path}: {message}$"):
        pack.pack(path)


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads unreadable files")
def test_an_unreadable_file_is_a_one_line_error_naming_it(tmp_path: Path) -> None:
    root = project(tmp_path / "p")
    (root / "mylib" / "__init__.py").chmod(0)
    with pytest.raises(ConfigError, match=r"^workspace .*: mylib/__init__.py: cannot read it: "):
        pack.pack(root)


def test_a_file_the_os_refuses_to_read_is_a_one_line_error_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same error where the test runs as root (as CI does), whom no mode bits stop: the
    kernel's refusal is played by an ``open`` that raises EACCES for that one file (a test double
    for what root cannot meet here); every other file is read for real."""
    root = project(tmp_path / "p")
    denied = str(root / "mylib" / "__init__.py")
    real_open = open

    def refusing_open(file: str, *args: object, **kwargs: object) -> object:
        if os.fspath(file) == denied:
            raise PermissionError(13, "Permission denied", denied)
        return real_open(file, *args, **kwargs)  # type: ignore[call-overload]

    monkeypatch.setattr(pack, "open", refusing_open, raising=False)
    with pytest.raises(
        ConfigError,
        match=r"^workspace .*: mylib/__init__.py: cannot read it: .*[Pp]ermission denied",
    ):
        pack.pack(root)


def test_a_folder_over_the_limit_is_refused_naming_its_size_the_limit_and_the_largest(
    tmp_path: Path,
) -> None:
    root = project(tmp_path / "p")
    (root / "data").mkdir()
    (root / "data" / "weights.bin").write_bytes(b"\0" * 3 * 1024 * 1024)
    with pytest.raises(ConfigError) as e:
        pack.pack(root, max_size=1024 * 1024)
    message = str(e.value)
    assert message.startswith(f"workspace {root}: 3.0 MiB is over the limit of 1.0 MiB")
    assert "(largest: data 3.0 MiB, " in message
    assert "--workdir-exclude" in message and names.ENV_LIMIT in message
    assert "\n" not in message


def test_the_limit_comes_from_the_environment_as_a_quantity() -> None:
    assert pack.limit_from({}) == names.DEFAULT_LIMIT
    assert pack.limit_from({names.ENV_LIMIT: "2Mi"}) == 2 * 1024 * 1024
    with pytest.raises(ConfigError, match="TRAINJOB_WORKSPACE_LIMIT: Invalid value: 'lots'"):
        pack.limit_from({names.ENV_LIMIT: "lots"})
