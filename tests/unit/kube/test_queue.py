"""The work queue keeps client-go's contract: dedup, one worker per key, delays, backoff."""

from __future__ import annotations

import threading
import time

import pytest

from trainjob.kube.queue import RateLimiter, WorkQueue


def test_a_key_added_twice_before_a_worker_takes_it_is_processed_once() -> None:
    q = WorkQueue()
    q.add("ns/a")
    q.add("ns/a")
    q.add("ns/b")
    assert [q.get(0), q.get(0), q.get(0)] == ["ns/a", "ns/b", None]


def test_a_key_added_while_processing_waits_until_done() -> None:
    q = WorkQueue()
    q.add("ns/a")
    assert q.get(0) == "ns/a"
    q.add("ns/a")
    assert q.get(0) is None, "a second worker must not get a key that is being processed"
    q.done("ns/a")
    assert q.get(0) == "ns/a"
    q.done("ns/a")
    assert q.get(0) is None


def test_a_key_done_without_being_added_again_is_gone() -> None:
    q = WorkQueue()
    q.add("k")
    q.get(0)
    q.done("k")
    assert len(q) == 0 and q.processing() == 0


def test_add_after_delays_a_key() -> None:
    q = WorkQueue()
    q.add_after("k", 0.2)
    assert q.get(0.05) is None
    started = time.monotonic()
    assert q.get(2) == "k"
    assert 0.1 <= time.monotonic() - started + 0.05 < 1.0


def test_the_earliest_of_two_delays_wins() -> None:
    q = WorkQueue()
    q.add_after("k", 5)
    q.add_after("k", 0.05)
    assert q.get(1) == "k"
    q.done("k")
    assert q.waiting() == 0


def test_a_later_delay_does_not_postpone_an_earlier_one() -> None:
    q = WorkQueue()
    q.add_after("k", 0.05)
    q.add_after("k", 5)
    assert q.get(1) == "k"


@pytest.mark.parametrize(
    ("failures", "want"),
    [
        pytest.param(0, 0.05, id="first failure waits the base delay"),
        pytest.param(1, 0.1, id="second failure doubles it"),
        pytest.param(4, 0.8, id="fifth failure is 2**4 times the base"),
        pytest.param(30, 300.0, id="many failures are capped"),
    ],
)
def test_rate_limiter_backs_off_exponentially(failures: int, want: float) -> None:
    rl = RateLimiter(base=0.05, cap=300.0)
    for _ in range(failures):
        rl.when("k")
    assert rl.when("k") == pytest.approx(want)


def test_forget_resets_the_backoff() -> None:
    rl = RateLimiter(base=1.0, cap=100.0)
    rl.when("k")
    rl.when("k")
    rl.forget("k")
    assert rl.when("k") == 1.0
    assert rl.failures("other") == 0


def test_add_rate_limited_requeues_after_the_backoff() -> None:
    q = WorkQueue(RateLimiter(base=0.05, cap=1.0))
    assert q.add_rate_limited("k") == pytest.approx(0.05)
    assert q.num_requeues("k") == 1
    assert q.get(1) == "k"


def test_shut_down_wakes_waiting_workers() -> None:
    q = WorkQueue()
    got: list[str | None] = []
    t = threading.Thread(target=lambda: got.append(q.get()))
    t.start()
    time.sleep(0.05)
    q.shut_down()
    t.join(2)
    assert not t.is_alive() and got == [None]
    q.add("late")
    assert q.get(0) is None, "adds after shutdown are dropped"


def test_concurrent_workers_never_process_the_same_key_at_once() -> None:
    q = WorkQueue()
    keys = [f"ns/{i % 7}" for i in range(300)]
    in_flight: set[str] = set()
    overlap: list[str] = []
    seen: list[str] = []
    lock = threading.Lock()

    def worker() -> None:
        while (key := q.get(0.5)) is not None:
            with lock:
                if key in in_flight:
                    overlap.append(key)
                in_flight.add(key)
                seen.append(key)
            time.sleep(0.001)
            with lock:
                in_flight.discard(key)
            q.done(key)

    threads = [threading.Thread(target=worker) for _ in range(6)]
    for t in threads:
        t.start()
    for k in keys:
        q.add(k)
    for t in threads:
        t.join(5)
    assert overlap == []
    assert set(seen) == set(keys)
    assert len(seen) < len(keys), "repeated adds of a queued key must be folded"
