"""How many threads each process of a run gets: this machine's cores shared by the processes that
run on it at once.

torch sizes its intra-op pool (and OpenMP/MKL theirs) from ``OMP_NUM_THREADS``, else from every
core; torchrun sets 1 for each of several workers, else leaves every core to each. Neither fits
several processes on one machine: two local "nodes" on 2 cores, each using both, ran at 0.34x of
one node (threads fighting for cores, gloo spinning). Each process gets ``cores // processes``
instead (at least 1). Used by the local backend (all the pods of a replicatedJob share the
machine) and by the LLM trainers' launchers (the workers torchrun starts on one node).

At the top of the package because those two users may not import each other: the trainers run
inside a cluster's container and import no backend, and the local backend's pods should not load
the trainers' package to size their threads. It imports only ``os``.
"""

from __future__ import annotations

import os

ENV = "OMP_NUM_THREADS"


def available() -> int:
    """The cores this process may run on (its CPU affinity, else the machine's count)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # macOS has no sched_getaffinity
        return max(1, os.cpu_count() or 1)


def share(processes: int, cores: int | None = None) -> int:
    """Threads for each of ``processes`` running at once on ``cores`` (default: :func:`available`)."""
    return max(1, (cores if cores is not None else available()) // max(1, processes))
