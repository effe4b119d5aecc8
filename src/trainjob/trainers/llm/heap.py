"""A CPU training process keeps the memory it frees, so a step's tensors reuse pages already mapped.

glibc's malloc gives each allocation above its mmap threshold (128 KiB, raised as such chunks are
freed) pages fresh from the kernel, and returns the free top of the heap above its trim threshold.
A training step frees and allocates the same activations, logits and temporaries every step, so
on the CPU each step faults those pages in again: 8,800-9,500 minor faults a step of
``benchmarks/finetune.py``'s LoRA run on one thread (about 5% of its CPU time), 33,000 a step of
its full fine-tune (the gradients too), against 2,100-2,400 and 27,000 for a plain
transformers loop (trainjob's step also frees the temporaries of the logits' entropy and
accuracy). With both thresholds at 1 GiB the heap keeps what it frees, as PyTorch's CUDA caching
allocator keeps device memory: 800-900 faults a step are left. The cost
is memory that stays mapped once freed, until the process exits: peak RSS +0-1% for that LoRA
run, +6.5% for the full fine-tune (freed blocks kept in the heap).

Called by :mod:`.engine` when the trainer is built, for a run on the CPU only. A process whose
malloc was tuned through the environment (``GLIBC_TUNABLES`` naming malloc, ``MALLOC_*_`` variables)
keeps its own settings; so does any libc but glibc, and an allocator preloaded in its place.
"""

from __future__ import annotations

import ctypes
import os
import platform

M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
"""``mallopt`` parameters (glibc's ``malloc.h``)."""
THRESHOLD = 1 << 30
"""Both thresholds: frees below 1 GiB stay in the heap; larger blocks still map and unmap."""
ENV = ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_", "MALLOC_MMAP_MAX_")
"""glibc's environment variables for the same settings: set, they win."""


def tuned_by_user() -> bool:
    """Whether this process's malloc was tuned (or replaced) through the environment."""
    if any(name in os.environ for name in ENV):
        return True
    if "glibc.malloc." in os.environ.get("GLIBC_TUNABLES", ""):
        return True
    return bool(os.environ.get("LD_PRELOAD", "").strip())  # jemalloc, tcmalloc, ...


def keep_freed_memory() -> bool:
    """Set glibc malloc's mmap and trim thresholds to :data:`THRESHOLD`; whether it did."""
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc" or tuned_by_user():
        return False
    try:
        libc = ctypes.CDLL(None)
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    return bool(mallopt(M_MMAP_THRESHOLD, THRESHOLD)) and bool(mallopt(M_TRIM_THRESHOLD, THRESHOLD))
