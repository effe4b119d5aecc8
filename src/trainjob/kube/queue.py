"""The work queue: deduplicated keys, one worker per key at a time, delayed and rate-limited adds.

Semantics of client-go's ``workqueue`` (the contract every Kubernetes controller relies on):

* a key added many times before a worker takes it is processed once (``dirty`` set);
* a key is never handed to two workers at once: added while being processed, it is queued again
  only when :meth:`WorkQueue.done` is called (``processing`` set);
* :meth:`add_after` delays a key (the earliest requested time wins);
* :meth:`add_rate_limited` delays a key by its per-key exponential backoff
  (``base * 2**failures``, capped), which :meth:`forget` resets after a success.

Used by ``trainjob.controller.manager``: informer handlers add keys, workers ``get``/``done``.
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections import deque
from dataclasses import dataclass, field


@dataclass
class RateLimiter:
    """Per-key exponential backoff: ``base * 2**n`` seconds after the n-th failure, at most ``cap``."""

    base: float = 0.05
    cap: float = 300.0
    _failures: dict[str, int] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def when(self, key: str) -> float:
        with self._lock:
            n = self._failures.get(key, 0)
            self._failures[key] = n + 1
        if n >= 64:
            return self.cap
        return float(min(self.cap, self.base * (2**n)))

    def forget(self, key: str) -> None:
        with self._lock:
            self._failures.pop(key, None)

    def failures(self, key: str) -> int:
        with self._lock:
            return self._failures.get(key, 0)


class WorkQueue:
    """A thread-safe queue of keys (``namespace/name``) with client-go workqueue semantics."""

    def __init__(self, rate_limiter: RateLimiter | None = None) -> None:
        self.rate_limiter = rate_limiter or RateLimiter()
        self._queue: deque[str] = deque()
        self._dirty: set[str] = set()
        self._processing: set[str] = set()
        self._waiting: list[tuple[float, int, str]] = []  # heap of (ready_at, seq, key)
        self._ready_at: dict[str, float] = {}
        self._seq = itertools.count()
        self._cond = threading.Condition()
        self._shutting_down = False
        self.adds = 0

    # -- producers -------------------------------------------------------------------------------
    def add(self, key: str) -> None:
        """Queue ``key`` now (no-op when it is already queued)."""
        with self._cond:
            self._add_locked(key)

    def _add_locked(self, key: str) -> None:
        if self._shutting_down or key in self._dirty:
            return
        self.adds += 1
        self._dirty.add(key)
        if key not in self._processing:
            self._queue.append(key)
            self._cond.notify()

    def add_after(self, key: str, delay: float) -> None:
        """Queue ``key`` after ``delay`` seconds (sooner if already waiting with an earlier time)."""
        if delay <= 0:
            self.add(key)
            return
        ready = time.monotonic() + delay
        with self._cond:
            if self._shutting_down:
                return
            current = self._ready_at.get(key)
            if current is not None and current <= ready:
                return
            self._ready_at[key] = ready
            heapq.heappush(self._waiting, (ready, next(self._seq), key))
            self._cond.notify()

    def add_rate_limited(self, key: str) -> float:
        """Queue ``key`` after its backoff; returns the delay chosen."""
        delay = self.rate_limiter.when(key)
        self.add_after(key, delay)
        return delay

    def forget(self, key: str) -> None:
        """The key succeeded: reset its backoff."""
        self.rate_limiter.forget(key)

    def num_requeues(self, key: str) -> int:
        return self.rate_limiter.failures(key)

    # -- consumers -------------------------------------------------------------------------------
    def get(self, timeout: float | None = None) -> str | None:
        """The next key to process (None on shutdown or after ``timeout`` seconds)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while True:
                self._promote_locked()
                if self._queue:
                    key = self._queue.popleft()
                    self._processing.add(key)
                    self._dirty.discard(key)
                    return key
                if self._shutting_down:
                    return None
                now = time.monotonic()
                wait = None if not self._waiting else max(0.0, self._waiting[0][0] - now)
                if deadline is not None:
                    left = deadline - now
                    if left <= 0:
                        return None
                    wait = left if wait is None else min(wait, left)
                self._cond.wait(wait)

    def done(self, key: str) -> None:
        """The worker finished ``key``; if it was added meanwhile, queue it again."""
        with self._cond:
            self._processing.discard(key)
            if key in self._dirty:
                self._queue.append(key)
                self._cond.notify()

    def _promote_locked(self) -> None:
        now = time.monotonic()
        while self._waiting and self._waiting[0][0] <= now:
            ready, _, key = heapq.heappop(self._waiting)
            if self._ready_at.get(key) != ready:
                continue  # superseded by an earlier add_after
            del self._ready_at[key]
            self._add_locked(key)

    # -- lifecycle and introspection --------------------------------------------------------------
    def shut_down(self) -> None:
        """Wake every waiting worker; ``get`` returns None once the queue is drained."""
        with self._cond:
            self._shutting_down = True
            self._waiting.clear()
            self._ready_at.clear()
            self._cond.notify_all()

    def __len__(self) -> int:
        with self._cond:
            return len(self._queue)

    def waiting(self) -> int:
        """Keys scheduled for later (``add_after``/``add_rate_limited``)."""
        with self._cond:
            return len(self._ready_at)

    def processing(self) -> int:
        with self._cond:
            return len(self._processing)
