"""What the file and S3 sources share: ignore patterns, the resume check and progress lines.

Called by ``sources.file`` and ``sources.s3`` (and ``sources.hf`` for its summary line). Each
source lists the files it would fetch as ``Item`` (relative path and size), drops the ignored
ones with ``is_ignored``, splits off those already present with ``split_present``, then copies
the rest, reporting each finished file to a ``Progress``, which logs pip-like lines::

    Downloading s3://bucket/data to /workspace/dataset
    3 files (12.0 MiB) to download, 2 already present
    1/3 files, 4.0/12.0 MiB, 2.0 MiB/s, ETA 0:04
    3/3 files, 12.0/12.0 MiB, 2.0 MiB/s
    Downloaded 3 files (12.0 MiB) in 0.8 s

Files are written to a ``.part`` sibling and renamed when complete, so an interrupted run leaves
no file that a resumed run would take for finished. A file already present counts only when its
content is the source's, not merely its size (``split_present`` with a ``same`` check: the S3
ETag's MD5, a local file's bytes): a file of the right size but wrong content is fetched again.
"""

from __future__ import annotations

import hashlib
import logging
import math
import os
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from fnmatch import fnmatch
from pathlib import Path

log = logging.getLogger(__name__)

# Seconds between two "N/M files" lines; the last file always gets one.
PROGRESS_INTERVAL = 2.0
PART_SUFFIX = ".part"
# Seconds before a rate (and the ETA from it) is worth printing.
RATE_AFTER = 0.5


@dataclass(frozen=True)
class Item:
    """One file to fetch: its path relative to the output dir (``/``-separated) and its size."""

    relpath: str
    size: int
    etag: str | None = None  # the source's content tag (S3: the object's ETag), when it has one


def is_ignored(relpath: str, patterns: Iterable[str]) -> bool:
    """Whether ``relpath`` matches an ignore pattern, with huggingface_hub's rules.

    fnmatch on the whole relative path, so ``*`` also matches ``/`` (``*.bin`` drops
    ``sub/x.bin``); a pattern ending in ``/`` drops everything under that directory.
    """
    for pattern in patterns:
        if pattern.endswith("/"):
            pattern += "*"
        if fnmatch(relpath, pattern):
            return True
    return False


def all_ignored(uri: str, listed: int, patterns: Iterable[str]) -> str:
    """The error for a source whose every file the ignore patterns leave out.

    Upstream's initializers then succeed with an empty folder, and training fails later on a
    model without weights or a dataset without rows; saying so here names the setting to change.
    """
    return (
        f"IGNORE_PATTERNS={','.join(patterns)!r} leaves out all {listed} file(s) under {uri}: "
        "nothing to download; narrow IGNORE_PATTERNS (set it to an empty value to keep everything)"
    )


def is_safe(relpath: str) -> bool:
    """Whether ``relpath`` stays inside the output dir (no ``..``, not absolute, not empty)."""
    parts = relpath.split("/")
    return bool(relpath) and not relpath.startswith("/") and ".." not in parts


def eta(seconds: float) -> str:
    """pip's remaining-time style: ``0:04``, ``12:30``, ``1:02:03``."""
    secs = max(0, round(seconds))
    hours, rest = divmod(secs, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def mib(size: int) -> str:
    """A byte count as pip-like MiB with one decimal."""
    return f"{size / 2**20:.1f} MiB"


def split_present(
    items: Iterable[Item], dest: Path, same: Callable[[Item, Path], bool] | None = None
) -> tuple[list[Item], list[Item]]:
    """Split ``items`` into (to fetch, already in ``dest``): present means the same size and,
    with ``same``, the same content (``same(item, path)``)."""
    todo: list[Item] = []
    present: list[Item] = []
    for item in items:
        target = dest / item.relpath
        try:
            ok = target.is_file() and target.stat().st_size == item.size
            if ok and same is not None and not same(item, target):
                log.info("%s: present with other content: downloading it again", item.relpath)
                ok = False
        except OSError:
            ok = False
        (present if ok else todo).append(item)
    return todo, present


def md5_of(path: Path, start: int = 0, length: int | None = None) -> str:
    """The MD5 of ``path``'s bytes (or of ``length`` bytes from ``start``), hex."""
    digest = hashlib.md5(usedforsecurity=False)
    left = length
    with path.open("rb") as f:
        f.seek(start)
        while left is None or left > 0:
            chunk = f.read(1 << 20 if left is None else min(1 << 20, left))
            if not chunk:
                break
            digest.update(chunk)
            if left is not None:
                left -= len(chunk)
    return digest.hexdigest()


_MIB = 1 << 20
# Part sizes S3 clients use (aws cli and boto3: 8 MiB; others 5, 15, 16, 64, 100 MiB).
_PART_SIZES_MIB = (8, 5, 16, 15, 64, 100, 10, 32, 128, 256, 512)


def matches_etag(path: Path, etag: str) -> bool:
    """Whether ``path`` holds the object whose S3 ETag is ``etag``: the MD5 of its bytes for a
    single-part upload; for a multipart one (``<md5 of the parts' md5s>-<parts>``) the same
    computed with the usual part sizes. An ETag that is neither (server-side encryption with
    KMS) cannot tell, so the file is fetched again rather than trusted."""
    tag = etag.strip('"').lower()
    if len(tag) == 32 and "-" not in tag:
        return md5_of(path) == tag
    head, sep, count = tag.partition("-")
    if not sep or not count.isdigit() or len(head) != 32:
        return False
    parts, size = int(count), path.stat().st_size
    candidates = [s * _MIB for s in _PART_SIZES_MIB]
    candidates.insert(0, math.ceil(size / parts / _MIB) * _MIB)  # the smallest whole-MiB fit
    for part in dict.fromkeys(candidates):
        if part <= 0 or math.ceil(size / part) != parts:
            continue
        digests = b"".join(bytes.fromhex(md5_of(path, i * part, part)) for i in range(parts))
        if hashlib.md5(digests, usedforsecurity=False).hexdigest() == head:
            return True
    return False


def write_atomically(target: Path, write: Callable[[Path], None]) -> None:
    """Run ``write(tmp)`` on a ``.part`` sibling of ``target``, then rename it into place."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(target.name + PART_SUFFIX)
    try:
        write(tmp)
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


class Progress:
    """Counts finished files from any thread and logs a line at most every ``interval`` seconds."""

    def __init__(
        self,
        todo: list[Item],
        present: list[Item],
        interval: float = PROGRESS_INTERVAL,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.total_files = len(todo)
        self.total_bytes = sum(item.size for item in todo)
        self.done_files = 0
        self.done_bytes = 0
        self._interval = interval
        self._clock = clock
        self._start = clock()
        self._last = self._start
        self._lock = threading.Lock()
        line = f"{self.total_files} files ({mib(self.total_bytes)}) to download"
        if present:
            line += f", {len(present)} already present"
        log.info(line)

    def add_bytes(self, size: int) -> None:
        """Record ``size`` bytes of a file still being written; log a line if it is time to.

        A source that streams calls this per chunk, then ``file_done(size, counted=True)``, so
        one large file shows progress too."""
        with self._lock:
            self.done_bytes += size
            now = self._clock()
            if now - self._last < self._interval:
                return
            self._last = now
            self._log()

    def file_done(self, size: int, counted: bool = False) -> None:
        """Record one finished file of ``size`` bytes (already in ``add_bytes`` when ``counted``);
        log a line if it is time to."""
        with self._lock:
            self.done_files += 1
            if not counted:
                self.done_bytes += size
            now = self._clock()
            last = self.done_files == self.total_files
            if not last and now - self._last < self._interval:
                return
            self._last = now
            self._log()

    def _log(self) -> None:
        log.info(
            "%d/%d files, %s/%s%s",
            self.done_files,
            self.total_files,
            mib(self.done_bytes)[: -len(" MiB")],
            mib(self.total_bytes),
            self._speed(),
        )

    def _speed(self) -> str:
        """``, 2.1 MiB/s, ETA 0:04`` once there is a rate to tell (half a second in); the last line
        only the rate."""
        elapsed = self._clock() - self._start
        if elapsed < RATE_AFTER or self.done_bytes <= 0:
            return ""
        rate = self.done_bytes / elapsed
        out = f", {mib(int(rate))}/s"
        left = self.total_bytes - self.done_bytes
        if left > 0:
            out += f", ETA {eta(left / rate)}"
        return out

    def finish(self) -> None:
        """Log the closing ``Downloaded N files (X MiB) in S s`` line."""
        elapsed = self._clock() - self._start
        log.info(
            "Downloaded %d files (%s) in %.1f s", self.done_files, mib(self.done_bytes), elapsed
        )
