"""Let torch's gloo worker threads go idle before Python finalizes, so a finished run exits 0.

Why: torch 2.15's ``backward()`` stashes a ``contextvars.Context`` in thread-local state
(``_engine_run_backward`` in torch/autograd/graph.py), and every collective that DDP starts during
backward captures that state. The gloo worker thread (``pt_gloo_runloop``) that ran such a
collective drops its last reference to it just after completing it, and the drop takes the GIL.
If the main thread has meanwhile finished and the interpreter is finalizing, CPython ends the
worker thread inside that C++ destructor and the C++ runtime aborts the process: ``terminate called
without an active exception``, SIGABRT, exit 134, after training succeeded. A core dump shows
exactly that stack (``ProcessGroupGloo::runLoop`` -> ``~AsyncAllreduceWork`` ->
``~ThreadLocalState`` -> ``take_gil`` -> ``pthread_exit`` -> ``std::terminate``).
``destroy_process_group()`` does not help: DDP's reducer keeps the process group and its threads
alive past it. The window is tiny, so it shows on loaded machines: 1-3 runs of 10 of a 2-node DDP
run on 2 busy cores here, with plain torchrun. Upstream: pytorch/pytorch#190489 and the abandoned
fix pytorch/pytorch#179291.

:func:`settle_gloo_workers`, registered with ``atexit`` (which runs before finalization), sleeps
with the GIL released until every gloo worker thread has stayed blocked in the kernel (state
``S``, waiting for work), without a context switch, across three checks 5 ms apart; at most
``timeout`` seconds. A worker still holding a finished collective is runnable, or is woken as soon
as this thread sleeps and frees the GIL, so its state or its switch count moves: it is not taken
for idle. Without gloo threads, or without ``/proc``, it returns at once; on a clean exit it costs
~20 ms.

The SDK ships this function's source ahead of every CustomTrainer function
(:mod:`trainjob.client.function`), so it stays stdlib-only and self-contained; the built-in LLM
trainer calls :func:`register`.
"""

from __future__ import annotations


def settle_gloo_workers(timeout: float = 5.0, tasks: str = "/proc/self/task") -> None:
    """Wait, GIL released, until torch's gloo worker threads are idle (see trainjob.trainers.gloo_exit)."""
    import os
    import time

    deadline = time.monotonic() + timeout
    before: dict[str, tuple[str, int]] = {}
    quiet = 0
    while quiet < 3 and time.monotonic() < deadline:
        try:
            tids = os.listdir(tasks)
        except OSError:
            return
        now: dict[str, tuple[str, int]] = {}
        for tid in tids:
            try:
                with open(f"{tasks}/{tid}/status") as f:
                    status = dict(line.partition(":")[::2] for line in f)
            except OSError:  # the thread ended
                continue
            if status.get("Name", "").strip() == "pt_gloo_runloop":
                switches = sum(
                    int(status.get(k, "0"))
                    for k in ("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches")
                )
                now[tid] = (status.get("State", "?").split()[0], switches)
        if not now:
            return
        # idle: asleep, and not woken since the last look (a thread that woke for the GIL and
        # lost it to this one sleeps again, but its switch count moved)
        idle = now == before and all(state == "S" for state, _ in now.values())
        quiet = quiet + 1 if idle else 0
        before = now
        time.sleep(0.005)


def register() -> None:
    """Run :func:`settle_gloo_workers` at exit (before the interpreter finalizes)."""
    import atexit

    atexit.register(settle_gloo_workers)
