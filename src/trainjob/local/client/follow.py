"""Following one pod's log as it is written, across the pod's restarts.

A restarted pod's log is rotated (:mod:`trainjob.local.state.logfiles`): the follower notices that the
path names a new file and goes on with it from its start; it ends when the pod ends. Used by
:meth:`trainjob.local.client.executor.LocalExecutor.logs` (``follow=True``).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO

from trainjob.executor import model as st
from trainjob.local.state import logfiles
from trainjob.local.state.store import JobRow, Store

_CHUNK = 1 << 16  # bytes a follower reads at a time


def follow(
    store: Store,
    check_alive: Callable[[JobRow], JobRow],
    row: JobRow,
    path: Path,
    job: str,
    index: int,
    job_index: int,
    start: int = 0,
    timestamps: bool = False,
) -> Iterator[str]:
    """Lines of the pod's log at ``path`` from byte ``start``, as they come, until the pod (or
    its job, or the job's supervisor: ``check_alive``) ends."""

    def pod_done() -> bool:
        cur = store.job(row.namespace, row.name)
        if cur is None or cur.uid != row.uid:
            return True
        cur = check_alive(cur)
        for p in store.pods(row.namespace, row.name):
            if (p.job, p.idx, p.job_index) == (job, index, job_index):
                if p.phase in (st.POD_SUCCEEDED, st.POD_FAILED):
                    return True
                if p.phase == st.POD_PENDING and cur.phase in st.FINISHED:
                    return True
        return cur.phase in st.FINISHED and not any(
            p.phase == st.POD_RUNNING for p in store.pods(row.namespace, row.name)
        )

    while True:  # one pass per attempt of the pod: a restart rotates its log
        while not path.exists():
            if pod_done():
                return
            time.sleep(0.05)
        try:
            f = path.open("rb")
        except FileNotFoundError:
            continue
        with f:
            f.seek(start)
            offset, start = start, 0  # a restarted pod's new log is read whole
            stamps = logfiles.Times(path) if timestamps else None

            def out(raw: bytes, end: int) -> str:
                nonlocal stamps
                text = raw.decode(errors="replace")
                if stamps is None:
                    return text
                if end > (stamps.offsets[-1] if stamps.offsets else 0):
                    stamps = logfiles.Times(path)  # newer records since
                return f"{stamps.at(end, path)} {text}"

            buf = b""
            while True:
                chunk = f.read(_CHUNK)
                if not chunk:
                    done = pod_done()
                    if not done and not _replaced(path, f):
                        time.sleep(0.05)
                        continue
                    chunk = f.read(_CHUNK)  # what it wrote before it ended
                    if not chunk:
                        if buf:
                            yield out(buf, offset + len(buf))
                        if done:
                            return
                        break  # the pod restarted: follow its new log
                buf += chunk
                if b"\n" in chunk:  # only the new bytes can end a line
                    *lines, buf = buf.split(b"\n")
                    for line in lines:
                        offset += len(line) + 1
                        yield out(line, offset)
                # A line with no end (a progress bar redrawn with \r) comes in pieces, as
                # logfiles.read gives it: memory stays bounded and nothing is scanned twice.
                while len(buf) >= logfiles.LONGEST_LINE:
                    piece, buf = buf[: logfiles.LONGEST_LINE], buf[logfiles.LONGEST_LINE :]
                    offset += len(piece)
                    yield out(piece, offset)


def _replaced(path: Path, f: BinaryIO) -> bool:
    """Whether ``path`` is no longer the file ``f`` reads (rotated when its pod restarted)."""
    try:
        return os.stat(path).st_ino != os.fstat(f.fileno()).st_ino
    except FileNotFoundError:
        return True
