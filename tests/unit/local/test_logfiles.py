"""A local pod's log read as ``kubectl logs`` reads one: the last N lines, the attempt before a
restart, and when each line was written (the supervisor's growth records)."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest

from trainjob.errors import NotFoundError
from trainjob.local.state import logfiles


@pytest.mark.parametrize(
    ("text", "n", "want"),
    [
        pytest.param(b"a\nb\nc\n", 2, ["b", "c"], id="the last two"),
        pytest.param(b"a\nb\nc", 2, ["b", "c"], id="a last line without newline counts"),
        pytest.param(b"a\nb\n", 5, ["a", "b"], id="fewer lines than asked: all"),
        pytest.param(b"a\nb\n", 0, [], id="none"),
        pytest.param(b"", 3, [], id="an empty log"),
        pytest.param(b"\n\nx\n", 2, ["", "x"], id="empty lines are lines"),
    ],
)
def test_tail(tmp_path: Path, text: bytes, n: int, want: list[str]) -> None:
    log = tmp_path / "node-0.log"
    log.write_bytes(text)
    assert list(logfiles.read(log, logfiles.tail_offset(log, n))) == want


def test_tail_across_blocks(tmp_path: Path) -> None:
    log = tmp_path / "node-0.log"
    log.write_bytes(b"".join(b"%d %s\n" % (i, b"y" * 5000) for i in range(100)))
    got = list(logfiles.read(log, logfiles.tail_offset(log, 30)))
    assert [g.split()[0] for g in got] == [str(i) for i in range(70, 100)]


def test_a_missing_log_has_no_lines(tmp_path: Path) -> None:
    log = tmp_path / "none.log"
    assert logfiles.tail_offset(log, 3) == 0
    assert list(logfiles.read(log)) == []


def test_previous_is_the_newest_renamed_attempt(tmp_path: Path) -> None:
    log = tmp_path / "node-0.log"
    log.write_text("now\n")
    with pytest.raises(NotFoundError, match='previous terminated container "node" in pod "p"'):
        logfiles.previous(log, "node", "p")
    (tmp_path / "node-0.log.1").write_text("first\n")
    (tmp_path / "node-0.log.2").write_text("second\n")
    assert logfiles.previous(log, "node", "p") == tmp_path / "node-0.log.2"


def test_timestamps_come_from_the_growth_records(tmp_path: Path) -> None:
    log = tmp_path / "node-0.log"
    log.write_text("one\ntwo\n")
    # the supervisor saw 4 bytes at t=100 and 8 at t=200; a repeat of a size is not recorded
    logfiles.times_path(log).write_text("4 100.000000\n8 200.5\n")
    assert logfiles.note_growth(log, 8, 8) == 8
    got = list(logfiles.read(log, timestamps=True))
    assert got == ["1970-01-01T00:01:40.000000Z one", "1970-01-01T00:03:20.500000Z two"]
    assert logfiles.times_path(log).read_text().count("\n") == 2


def test_a_line_after_the_last_record_has_the_file_s_time(tmp_path: Path) -> None:
    log = tmp_path / "node-0.log"
    log.write_text("one\n")
    assert logfiles.note_growth(log, 4, 0) == 4
    log.write_text("one\nlate\n")
    stamps = [line.split(" ", 1)[0] for line in logfiles.read(log, timestamps=True)]
    first, late = (datetime.fromisoformat(s.replace("Z", "+00:00")) for s in stamps)
    assert first <= late
