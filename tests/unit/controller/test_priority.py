"""Admission first (trainjob.controller.priority): while the webhook server answers reviews,
reconciles take turns (at most ``while_busy`` at once); when it is quiet, any number run."""

from __future__ import annotations

import threading
import time

from trainjob.controller import priority


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def wait_for(check: object, what: str) -> None:
    """Poll until ``check()`` (a synchronisation, not a timing assertion)."""
    deadline = time.monotonic() + 30
    while not check():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"never {what}"
        time.sleep(0.001)


def test_quiet_webhooks_hold_no_reconcile_back() -> None:
    gate = priority.AdmissionFirst(quiet=1.0, while_busy=1, clock=Clock())
    assert not gate.busy()
    with gate.turn(), gate.turn(), gate.turn():  # three at once, none waits
        pass
    assert gate.waits == 0


def test_while_the_webhook_serves_reconciles_take_turns() -> None:
    clock = Clock()
    gate = priority.AdmissionFirst(quiet=3600.0, while_busy=1, clock=clock)
    gate.served()
    assert gate.busy()
    order: list[str] = []
    first_in, release = threading.Event(), threading.Event()

    def first() -> None:
        with gate.turn():
            order.append("first in")
            first_in.set()
            release.wait(30)
            order.append("first out")

    def second() -> None:
        with gate.turn():
            order.append("second in")

    a = threading.Thread(target=first)
    a.start()
    assert first_in.wait(30)
    b = threading.Thread(target=second)
    b.start()
    wait_for(lambda: gate.waiting == 1, "waiting")
    assert order == ["first in"], "the second reconcile waits for its turn"
    release.set()
    a.join(30)
    b.join(30)
    assert order == ["first in", "first out", "second in"]
    assert gate.waits == 1


def test_a_waiting_reconcile_goes_on_once_the_webhook_falls_quiet() -> None:
    clock = Clock()
    gate = priority.AdmissionFirst(quiet=0.01, while_busy=1, clock=clock)
    gate.served()
    entered = threading.Event()

    def second() -> None:
        with gate.turn():
            entered.set()

    with gate.turn():  # a long reconcile holds the one turn
        b = threading.Thread(target=second)
        b.start()
        wait_for(lambda: gate.waiting == 1, "waiting")
        assert not entered.is_set()
        clock.now += 1.0  # no review for a while: quiet
        assert not gate.busy()
        assert entered.wait(30), "it no longer waits for the long one"
    b.join(30)


def test_while_busy_is_a_bound_not_a_pause() -> None:
    gate = priority.AdmissionFirst(quiet=3600.0, while_busy=2, clock=Clock())
    gate.served()
    with gate.turn(), gate.turn():  # two at once are allowed while busy
        pass
    assert gate.waits == 0
