"""Admission first: while the webhooks are serving, reconciles take turns.

A create call waits on the admission webhook (the apiserver calls it, then writes the object); a
reconcile waits on no one. Under a burst of creates both compete for the apiserver's CPU and, in
this process, for the GIL: measured on 500 TrainJobs at once, each reconcile's snapshot and JobSet
writes, made as fast as the TrainJobs arrive, made the create calls wait on an apiserver busy
with them. So while the webhook server has answered a request in the last :data:`QUIET_SECONDS`
(it calls :meth:`AdmissionFirst.served` for each), at most :data:`WHILE_BUSY` reconciles run at
once; otherwise any number (the ``--workers``). Reconciles still progress during a burst (one at
a time, never paused outright), and the work they leave is done at full speed when it ends;
upstream's controller makes the same trade with a client rate limit (QPS 50, burst 100), always.

And the process's GIL switch interval is :data:`SWITCH_INTERVAL`, not CPython's 5 ms: the
webhook server's loop thread takes the GIL several times a review (the connection's bytes, the
review, the answer), each time after the thread holding it (a reconcile, an informer parsing a
watch event) is asked to let go, which by default it does after 5 ms.

Used by ``trainjob.controller.manager`` (the workers, the webhook server).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator

QUIET_SECONDS = 0.25
"""How long after the webhook's last answer reconciles are still held to :data:`WHILE_BUSY`: the
apiserver still writes the admitted object after the answer, under load for ~100-300 ms."""
WHILE_BUSY = 1
"""Reconciles at once while the webhook is busy."""
SWITCH_INTERVAL = 0.001
"""The controller's ``sys.setswitchinterval`` (set by ``trainjob controller``). Measured on 500
TrainJobs at once beside reconciles, in one run each: the apiserver's mean wait for the webhook
41-51 ms against 95-103 ms at the default 5 ms, the create calls 0.38-0.57x as long."""


class AdmissionFirst:
    """The webhook server's recent activity, and the turns reconciles take meanwhile."""

    def __init__(
        self,
        quiet: float | None = None,
        while_busy: int | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.quiet = QUIET_SECONDS if quiet is None else quiet
        self.while_busy = max(1, WHILE_BUSY if while_busy is None else while_busy)
        self.clock = clock
        self._last = float("-inf")
        self._running = 0
        self._cond = threading.Condition()
        self.waits = 0
        """How often a reconcile waited for its turn."""
        self.waiting = 0
        """Reconciles waiting for their turn now."""

    def served(self) -> None:
        """The webhook server answered (or is answering) an admission request now."""
        self._last = self.clock()  # one float store: no lock on the server's loop

    def busy(self) -> bool:
        return self.clock() - self._last < self.quiet

    @contextlib.contextmanager
    def turn(self) -> Iterator[None]:
        """Run one reconcile: at once, unless the webhook is busy and :attr:`while_busy`
        reconciles run already; then when one of them ends or the webhook falls quiet."""
        with self._cond:
            waited = False
            while self._running >= self.while_busy:
                left = self._last + self.quiet - self.clock()
                if left <= 0:
                    break
                if not waited:
                    waited = True
                    self.waits += 1
                    self.waiting += 1
                self._cond.wait(left)
            self.waiting -= waited
            self._running += 1
        try:
            yield
        finally:
            with self._cond:
                self._running -= 1
                self._cond.notify()
