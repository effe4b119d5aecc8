"""Reading a local pod's log file as ``kubectl logs`` reads a pod's: ``--tail``, ``--previous``,
``--timestamps``, streamed (a 200 MB log is never in memory at once).

Processes write their output straight into ``<step>.log`` (no copy through Python). When each line
came is recorded beside it, in ``<step>.log.times``: every supervisor tick (50 ms) that finds the
log grown appends ``<size> <unix time>``, so a line's time is the first record at or past its end,
within a tick of when it was written, as a container runtime stamps what it reads from a pod
(:func:`note_growth`, called by the supervisor). A restart renames both (``<step>.log.N``,
``<step>.log.N.times``); the newest ``.N`` is the previous attempt. Used by
:class:`trainjob.local.client.executor.LocalExecutor`.
"""

from __future__ import annotations

import bisect
import os
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import BinaryIO

from trainjob.errors import NotFoundError
from trainjob.local.state import files

LONGEST_LINE = 1 << 20  # a longer line (no newline in a megabyte) comes in pieces of this size
TIMES_SUFFIX = ".times"
_BLOCK = 1 << 16


def times_path(log: Path) -> Path:
    return log.with_name(log.name + TIMES_SUFFIX)


def note_growth(log: Path, size: int, last: int) -> int:
    """Record that ``log`` has reached ``size`` bytes now, when it grew past ``last``; return the
    size to compare with next time."""
    if size <= last:
        return last
    try:  # 0600 and never through a link, as the log itself (trainjob.local.state.files)
        fd = files.open_private(times_path(log))
        try:
            os.write(fd, f"{size} {time.time():.6f}\n".encode())
        finally:
            os.close(fd)
    except (OSError, files.UnsafePathError):  # no record: the lines get the file's time
        return last
    return size


class Times:
    """The growth records of one log: when each byte offset had been written."""

    def __init__(self, log: Path) -> None:
        self.offsets: list[int] = []
        self.stamps: list[float] = []
        try:
            text = times_path(log).read_text()
        except OSError:
            return
        for line in text.splitlines():
            parts = line.split()
            if len(parts) == 2:
                try:
                    self.offsets.append(int(parts[0]))
                    self.stamps.append(float(parts[1]))
                except ValueError:
                    continue
        self._log = log

    def at(self, end: int, log: Path | None = None) -> str:
        """RFC 3339 time (microseconds, as kubectl's ``--timestamps`` prints) of the line ending
        at byte ``end``: the first record at or past it; a line written since the last record is
        stamped with the file's modification time."""
        i = bisect.bisect_left(self.offsets, end)
        if i < len(self.stamps):
            when = self.stamps[i]
        else:
            try:
                when = os.stat(log or self._log).st_mtime
            except (OSError, AttributeError):
                when = time.time()
        return datetime.fromtimestamp(when, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def rotate(log: Path) -> None:
    """Keep a pod's log of an attempt that ended aside as ``<log>.N`` (the next free N), with its
    times file, so that the pod's next attempt writes a new log (:func:`previous` reads it)."""
    if log.exists():
        n = 1
        while log.with_name(f"{log.name}.{n}").exists():
            n += 1
        log.rename(log.with_name(f"{log.name}.{n}"))
        times = times_path(log)
        if times.exists():
            times.rename(times_path(log.with_name(f"{log.name}.{n}")))


def previous(log: Path, step: str, pod: str) -> Path:
    """The log of the step's previous attempt (the newest ``<step>.log.N``); NotFoundError, in
    kubectl's words, when the step has not restarted."""
    n = 0
    while log.with_name(f"{log.name}.{n + 1}").exists():
        n += 1
    if n == 0:
        raise NotFoundError(f'previous terminated container "{step}" in pod "{pod}" not found')
    return log.with_name(f"{log.name}.{n}")


def tail_offset(path: Path, lines: int) -> int:
    """Where the last ``lines`` lines of ``path`` start (a final line without newline counts),
    read backwards in blocks; 0 when it has fewer."""
    if lines <= 0:
        try:
            return path.stat().st_size
        except OSError:
            return 0
    try:
        f = path.open("rb")
    except OSError:
        return 0
    with f:
        end = f.seek(0, os.SEEK_END)
        pos = end
        if pos and _byte_at(f, pos - 1) == b"\n":
            pos -= 1  # the last line's own newline
        seen = 0
        while pos > 0:
            start = max(0, pos - _BLOCK)
            f.seek(start)
            block = f.read(pos - start)
            i = len(block)
            while True:
                i = block.rfind(b"\n", 0, i)
                if i < 0:
                    break
                seen += 1
                if seen == lines:
                    return start + i + 1
            pos = start
        return 0


def _byte_at(f: BinaryIO, offset: int) -> bytes:
    f.seek(offset)
    return f.read(1)


def read(path: Path, start: int = 0, timestamps: bool = False) -> Iterator[str]:
    """The lines of ``path`` from byte ``start``, streamed; each prefixed with when it was
    written (``2026-12-01T10:00:00.123456Z ``) when ``timestamps``."""
    try:
        f = path.open("rb")
    except FileNotFoundError:
        return iter(())
    return _lines(f, path, start, Times(path) if timestamps else None)


def _lines(f: BinaryIO, path: Path, start: int, times: Times | None) -> Iterator[str]:
    with f:
        f.seek(start)
        offset = start
        while raw := f.readline(LONGEST_LINE):
            offset += len(raw)
            line = raw.removesuffix(b"\n").decode(errors="replace")
            yield f"{times.at(offset, path)} {line}" if times is not None else line
