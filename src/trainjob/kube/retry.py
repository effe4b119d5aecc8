"""Backoff and retry helpers for API calls (client-go's ``wait.Backoff`` and ``RetryOnConflict``).

* :func:`retry_on_conflict` re-runs a read-modify-write function when it hits a 409 Conflict,
  sleeping between attempts with :class:`Backoff` delays and re-raising the last error when the
  steps run out. Used by the webhook server (registering its CA bundle).

(The client itself retries what the apiserver asked it to with ``Retry-After``: kube/client.py.)
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TypeVar

from trainjob.kube.errors import Conflict

T = TypeVar("T")


@dataclass(frozen=True)
class Backoff:
    """``steps`` delays: ``initial``, times ``factor`` each step, capped at ``cap``, +-``jitter``."""

    initial: float = 0.01
    factor: float = 2.0
    cap: float = 10.0
    jitter: float = 0.1
    steps: int = 5

    def delays(self) -> Iterator[float]:
        delay = self.initial
        for _ in range(self.steps):
            yield max(0.0, delay * (1 + random.uniform(-self.jitter, self.jitter)))
            delay = min(self.cap, delay * self.factor)


CONFLICT_BACKOFF = Backoff(initial=0.01, factor=1.0, jitter=0.1, steps=5)
"""client-go ``retry.DefaultRetry``: 5 quick tries, 10ms apart."""

"""About 12 seconds in all: long enough to ride out an apiserver restart on loopback."""


def retry_on_conflict(fn: Callable[[], T], backoff: Backoff = CONFLICT_BACKOFF) -> T:
    """Run ``fn`` (which must re-read what it writes) until it does not raise Conflict."""
    for delay in backoff.delays():
        try:
            return fn()
        except Conflict:
            time.sleep(delay)
    return fn()
