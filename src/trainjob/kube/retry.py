"""Backoff and retry helpers for API calls (client-go's ``wait.Backoff`` and ``RetryOnConflict``).

* :func:`retry_on_conflict` re-runs a read-modify-write function when it hits a 409 Conflict.
* :func:`with_retries` re-runs a call that failed with a temporary error (429, 5xx, no answer),
  honouring the server's ``Retry-After``.

Both sleep between attempts with :class:`Backoff` delays and re-raise the last error when the steps
run out. Used by the controller (status writes, leases, webhook registration) and the kube client.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TypeVar

from trainjob.kube.errors import ApiError, Conflict, is_temporary

T = TypeVar("T")
log = logging.getLogger(__name__)


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

TEMPORARY_BACKOFF = Backoff(initial=0.2, factor=2.0, cap=10.0, jitter=0.2, steps=6)
"""About 12 seconds in all: long enough to ride out an apiserver restart on loopback."""


def retry_on_conflict(fn: Callable[[], T], backoff: Backoff = CONFLICT_BACKOFF) -> T:
    """Run ``fn`` (which must re-read what it writes) until it does not raise Conflict."""
    for delay in backoff.delays():
        try:
            return fn()
        except Conflict:
            time.sleep(delay)
    return fn()


def with_retries(
    fn: Callable[[], T],
    backoff: Backoff = TEMPORARY_BACKOFF,
    retryable: Callable[[BaseException], bool] = is_temporary,
    what: str = "",
) -> T:
    """Run ``fn``; on a retryable error sleep (``Retry-After`` if given) and try again."""
    for delay in backoff.delays():
        try:
            return fn()
        except ApiError as e:
            if not retryable(e):
                raise
            wait = e.retry_after or delay
            log.debug("retrying %s in %.2fs: %s", what or "request", wait, e)
            time.sleep(wait)
    return fn()
