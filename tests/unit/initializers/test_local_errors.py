"""Local I/O problems name the env var to fix: OUTPUT_PATH for writing, STORAGE_URI for reading."""

from __future__ import annotations

import logging
import os
import threading
from pathlib import Path

import pytest

from tests.unit.initializers.conftest import Run
from trainjob.initializers import config
from trainjob.initializers.sources import file, hf


def test_an_output_path_under_a_file_names_output_path(run: Run, tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.txt").write_text("a")
    blocker = tmp_path / "blocker"
    blocker.write_text("")
    proc = run(
        "dataset", {"STORAGE_URI": f"file://{tmp_path / 'src'}", "OUTPUT_PATH": f"{blocker}/out"}
    )
    assert proc.returncode == 1
    assert proc.stderr == (
        f"error: OUTPUT_PATH: cannot write {blocker}/out: Not a directory: "
        "set OUTPUT_PATH to a writable directory\n"
    )


def test_a_folder_os_walk_cannot_list_is_an_error_not_a_silent_skip(tmp_path: Path) -> None:
    # os.walk reports a folder it cannot list (here: not a folder at all) only to onerror.
    not_a_dir = tmp_path / "plain"
    not_a_dir.write_text("")
    with pytest.raises(config.InitializerError) as err:
        file.list_items(not_a_dir, (), tmp_path / "out")
    assert str(err.value).startswith(f"STORAGE_URI: cannot list {not_a_dir}: ")


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads unreadable folders")
def test_an_unreadable_folder_is_an_error_unless_ignored(run: Run, tmp_path: Path) -> None:
    src = tmp_path / "src"
    (src / "secret").mkdir(parents=True)
    (src / "a.txt").write_text("a")
    (src / "secret").chmod(0)
    try:
        env = {"STORAGE_URI": f"file://{src}", "OUTPUT_PATH": str(tmp_path / "out")}
        proc = run("dataset", env)
        assert proc.returncode == 1
        assert proc.stderr.startswith(f"error: STORAGE_URI: cannot list {src / 'secret'}: ")
        proc = run("dataset", {**env, "IGNORE_PATTERNS": "secret/"})
        assert proc.returncode == 0, proc.stderr
    finally:
        (src / "secret").chmod(0o755)


def test_ignored_folders_are_not_walked(tmp_path: Path) -> None:
    (tmp_path / "keep").mkdir()
    (tmp_path / "keep" / "a.txt").write_text("a")
    (tmp_path / "skip").mkdir()
    (tmp_path / "skip" / "b.txt").write_text("b")
    items = file.list_items(tmp_path, ("skip/",), tmp_path / "out")
    assert [item.relpath for item in items] == ["keep/a.txt"]


@pytest.mark.parametrize("uri", ["hf://org/repo/../other", "hf://org/repo/./data"])
def test_dot_segments_in_an_hf_path_are_refused(uri: str) -> None:
    with pytest.raises(config.InitializerError) as err:
        hf.parse_uri(uri)
    assert str(err.value) == (
        f"STORAGE_URI: {uri!r} has a '.' or '..' path segment: "
        "name the file or folder inside the repo, e.g. hf://org/repo/data"
    )


def test_a_long_hub_download_logs_progress_while_it_runs(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """huggingface_hub's bars are off, so a watcher logs the bytes so far (the Hub is a double
    here: a download function that writes a finished file and a partial one, then waits)."""
    cfg = config.from_env(
        config.Kind.MODEL, {"STORAGE_URI": "hf://org/model", "OUTPUT_PATH": str(tmp_path)}
    )
    seen = threading.Event()

    class Seen(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if "so far" in record.getMessage():
                seen.set()

    def download(req: hf.Request) -> None:
        (tmp_path / "config.json").write_bytes(b"x" * 2**20)
        cache = tmp_path / ".cache" / "huggingface" / "download"
        cache.mkdir(parents=True)
        (cache / "model.safetensors.incomplete").write_bytes(b"y" * 2**20)
        seen.wait(60)

    handler = Seen()
    logging.getLogger(hf.__name__).addHandler(handler)
    try:
        with caplog.at_level(logging.INFO, logger=hf.__name__):
            hf.fetch(cfg, download=download, interval=0.01)
    finally:
        logging.getLogger(hf.__name__).removeHandler(handler)
    assert seen.is_set()
    assert "1 files, 2.0 MiB so far" in caplog.messages
