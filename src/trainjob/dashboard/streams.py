"""Server-sent events, and blocking iterators (a followed log) read from async code.

The executor interface is synchronous (a local store connection, a cluster's HTTP client): the
app calls it in worker threads (:class:`Executors`, one executor per thread, as the local
store asks). A followed log is a generator that blocks until its pod writes: :func:`lines_of`
reads it in a thread of its own and hands its lines to the event loop in batches, so one
browser's log costs one thread, and a line printed reaches the page in one poll of the log
(50 ms locally) plus a network hop.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any, Generic, TypeVar

import anyio.to_thread

T = TypeVar("T")
E = TypeVar("E")

MAX_BATCH = 500
"""Log lines sent in one event at most (a fast log, or a long one read from its start)."""

KEEPALIVE_SECONDS = 15.0
"""A comment line this often on a quiet stream, so proxies and browsers keep it open."""


def event(name: str, data: Any) -> str:
    """One SSE event: ``event:`` and one ``data:`` line of JSON (JSON has no raw newline)."""
    return f"event: {name}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n"


def keepalive() -> str:
    return ": keepalive\n\n"


class Executors(Generic[E]):
    """One executor per worker thread, opened on first use (``opener``: the CLI's choice of
    backend); :meth:`call` runs a function of the thread's executor off the event loop. The
    TrainJob :class:`~trainjob.executor.base.Executor`, and the same for the
    :class:`~trainjob.executor.sweeps.SweepExecutor` of sweeps."""

    def __init__(self, opener: Callable[[], E]) -> None:
        self.opener = opener
        self._local = threading.local()
        self.first = opener()  # fails now, at start, when the backend cannot be reached

    def get(self) -> E:
        ex: E | None = getattr(self._local, "executor", None)
        if ex is None:
            ex = self.opener()
            self._local.executor = ex
        return ex

    async def call(self, fn: Callable[[E], T]) -> T:
        return await anyio.to_thread.run_sync(lambda: fn(self.get()))


async def lines_of(
    open_lines: Callable[[], Iterator[str]], stop: threading.Event
) -> AsyncIterator[list[str] | BaseException]:
    """The lines of ``open_lines()`` (called in a thread of its own) in batches as they come;
    an exception it raised as the last item. ``stop`` set (the browser went away) ends the
    thread at its next line."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[str | BaseException | None] = asyncio.Queue()

    def put(item: str | BaseException | None) -> None:
        loop.call_soon_threadsafe(queue.put_nowait, item)

    def read() -> None:
        try:
            for line in open_lines():
                if stop.is_set():
                    return
                put(line)
        except BaseException as e:  # handed to the event loop, which reports it
            put(e)
        finally:
            put(None)

    threading.Thread(target=read, name="dashboard-log", daemon=True).start()
    pending: str | BaseException | None = None
    item: str | BaseException | None
    while True:
        if pending is not None:
            item, pending = pending, None
        else:
            try:
                item = await asyncio.wait_for(queue.get(), KEEPALIVE_SECONDS)
            except TimeoutError:
                yield []
                continue
        if item is None:
            return
        if isinstance(item, BaseException):
            yield item
            return
        batch = [item]
        while len(batch) < MAX_BATCH and not queue.empty():
            more = queue.get_nowait()
            if not isinstance(more, str):
                if more is None:
                    yield batch
                    return
                pending = more  # an error: after this batch
                break
            batch.append(more)
        yield batch
