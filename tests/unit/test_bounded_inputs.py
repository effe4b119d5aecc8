"""Reads are bounded (issue 11, class 5): ``-f /dev/zero``, ``/dev/urandom``, an oversized
manifest or an endless stdin end at once with one line (the 3 MiB limit of an API request), for
``plan`` and ``run`` alike; ``trainjob logs NAME`` streams a log instead of reading it whole."""

from __future__ import annotations

import io
import sys
import tracemalloc
from pathlib import Path

import pytest

from tests.redteam.cases import cli
from trainjob.local.state import logfiles

LIMIT = "3 MiB, the most a Kubernetes API request may hold: check that it is the manifest you meant, or split it"


@pytest.mark.parametrize("verb", ["plan", "run"])
@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom"])
def test_a_device_that_never_ends_is_refused_at_the_limit(
    verb: str, device: str, tmp_path: Path
) -> None:
    res = cli([verb, "-f", device], tmp_path / "home")
    assert (res.code, res.out, res.err) == (1, "", f'error: "{device}" is larger than {LIMIT}\n')


@pytest.mark.parametrize("verb", ["plan", "run"])
def test_a_manifest_over_the_limit_is_refused_unparsed(verb: str, tmp_path: Path) -> None:
    big = tmp_path / "big.yaml"
    big.write_text("# padding\n" * (400 * 1024))  # 4 MiB of comments
    res = cli([verb, "-f", str(big)], tmp_path / "home")
    assert (res.code, res.err) == (1, f'error: "{big}" is larger than {LIMIT}\n')


def test_stdin_over_the_limit_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    stdin = io.TextIOWrapper(io.BytesIO(b"#\n" * (2 * 1024 * 1024)))
    monkeypatch.setattr(sys, "stdin", stdin)
    res = cli(["plan", "-f", "-"], tmp_path / "home")
    assert (res.code, res.err) == (1, f"error: STDIN is larger than {LIMIT}\n")


def test_a_big_log_is_streamed_not_read_whole(tmp_path: Path) -> None:
    log = tmp_path / "node-0.log"
    line = b"step %07d loss 0.123456789 lr 0.001 " + b"x" * 60 + b"\n"
    with log.open("wb") as f:
        for i in range(200_000):  # 20 MB
            f.write(line % i)
    tracemalloc.start()
    try:
        count = 0
        for text in logfiles.read(log):
            count += 1
            last = text
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert (count, last) == (200_000, (line % 199_999).decode().rstrip("\n"))
    assert peak < 2 * 1024 * 1024, f"reading the log took {peak >> 20} MiB"


def test_the_tail_of_a_big_log_is_found_from_its_end(tmp_path: Path) -> None:
    """``logs --tail 3`` of a 20 MB log reads a block from the end, not the file."""
    log = tmp_path / "node-0.log"
    line = b"step %07d " + b"x" * 90 + b"\n"
    with log.open("wb") as f:
        for i in range(200_000):
            f.write(line % i)
    tracemalloc.start()
    try:
        got = list(logfiles.read(log, logfiles.tail_offset(log, 3)))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert got == [(line % i).decode().rstrip("\n") for i in (199_997, 199_998, 199_999)]
    assert peak < 1024 * 1024, f"finding the tail took {peak >> 20} MiB"
