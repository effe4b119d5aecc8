"""This machine's CPUs and memory, shared by the jobs of one home: a job runs once its share is free.

Every pod of a local job is a process here, so 100 jobs submitted at once would otherwise start
100 sets of processes on a laptop's cores and memory. Instead each job's supervisor takes a
share (:class:`Share`) before it starts any pod, and waits Queued until it fits, the jobs
submitted first going first (Kueue's StrictFIFO: a later job never passes a waiting one):

* a job needs the CPUs its pods request (each container's ``resources.requests.cpu``, else its
  limit; a pod that names none counts as one CPU) and the memory they request (``memory``; none:
  nothing), every pod of its JobSet counted;
* the jobs of the home may use the CPUs this process may run on (its affinity, a cgroup's
  ``cpu.max``), or ``TRAINJOB_LOCAL_CPUS``; and the memory (``MemTotal``, a cgroup's
  ``memory.max``), or ``TRAINJOB_LOCAL_MEMORY`` (``8Gi``): a job fits while the shares taken
  and its own stay within both, and the memory free now (``MemAvailable``) keeps
  :data:`RESERVE` beside what it requests;
* a job larger than the machine runs alone (its need is capped at the limit), and the first job
  of an idle home always starts, so that nothing waits forever.

A share is a file of ``home/capacity`` (``w_`` waiting, ``r_`` running; its order key and needs
in its name, so one ``listdir`` answers a waiting job) that its supervisor holds locked
(``flock``) while it lives: a share whose process died is unlocked, and whoever finds it
removes it. The decision to run is taken under ``capacity/.lock``. Used by
:mod:`trainjob.local.job.supervisor`.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import math
import os
import time
from collections.abc import Mapping
from fractions import Fraction
from pathlib import Path
from typing import Any, NamedTuple

from trainjob.api import quantity
from trainjob.local.state import files
from trainjob.runtime.plan import Plan

ENV_CPUS = "TRAINJOB_LOCAL_CPUS"
ENV_MEMORY = "TRAINJOB_LOCAL_MEMORY"
RESERVE = 256 << 20
"""Bytes of free memory (``MemAvailable``) a job admitted beside running ones must leave."""
RECHECK = 0.25
"""Seconds between a waiting job's looks at the shares."""
_MILLI = 1000


class Need(NamedTuple):
    """What a job's pods request: CPUs in thousandths (``500m`` is 500), memory in bytes."""

    millicpus: int
    memory: int


class Limit(NamedTuple):
    """What the jobs of a home may use at once, and what was wrong with a setting (then the
    machine's own figure is used)."""

    millicpus: int
    memory: int
    problems: tuple[str, ...] = ()


def _pod_specs(plan: Plan) -> list[tuple[int, dict[str, Any]]]:
    """(pods, pod spec) of each replicatedJob of the plan's JobSet."""
    out = []
    for rjob in (plan.jobset.get("spec") or {}).get("replicatedJobs") or ():
        job = (rjob.get("template") or {}).get("spec") or {}
        count = int(rjob.get("replicas", 1) or 0) * int(job.get("parallelism", 1) or 0)
        out.append((count, (job.get("template") or {}).get("spec") or {}))
    return out


def _requested(container: Mapping[str, Any], name: str) -> Fraction | None:
    resources = container.get("resources") or {}
    for kind in ("requests", "limits"):
        value = (resources.get(kind) or {}).get(name)
        if value is not None:
            try:
                return quantity.parse(value).amount
            except (quantity.QuantityError, TypeError):
                return None
    return None


def need(plan: Plan) -> Need:
    """What every pod of ``plan`` requests (:class:`Need`), one CPU for a pod that names none."""
    millicpus = memory = 0
    for count, spec in _pod_specs(plan):
        cpus = [_requested(ctr, "cpu") for ctr in spec.get("containers") or ()]
        named = [q for q in cpus if q is not None]
        pod_cpu = math.ceil(sum(named) * _MILLI) if named else _MILLI
        mems = [_requested(ctr, "memory") for ctr in spec.get("containers") or ()]
        pod_mem = math.ceil(sum(q for q in mems if q is not None))
        millicpus += count * max(pod_cpu, 1)
        memory += count * pod_mem
    return Need(millicpus, memory)


def _read(path: str) -> str:
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return ""


def _meminfo() -> dict[str, int]:
    out = {}
    for line in _read("/proc/meminfo").splitlines():
        key, _, rest = line.partition(":")
        words = rest.split()
        if words and words[0].isdigit():
            out[key] = int(words[0]) * 1024
    return out


def _cgroup_number(name: str) -> int | None:
    text = _read(f"/sys/fs/cgroup/{name}").strip()
    return int(text) if text.isdigit() else None


def machine_millicpus() -> int:
    """The CPUs this process may run on, in thousandths: its affinity, within a cgroup quota."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    millicpus = cpus * _MILLI
    quota = _read("/sys/fs/cgroup/cpu.max").split()
    if len(quota) == 2 and quota[0].isdigit() and quota[1].isdigit() and int(quota[1]):
        millicpus = min(millicpus, math.ceil(int(quota[0]) * _MILLI / int(quota[1])))
    return max(millicpus, 1)


def machine_memory() -> int:
    """Bytes of memory here: ``MemTotal``, within a cgroup's ``memory.max``."""
    total = _meminfo().get("MemTotal", 0)
    bound = _cgroup_number("memory.max")
    return min(total, bound) if total and bound else total or bound or 0


def available_memory() -> int | None:
    """Bytes free now (``MemAvailable``, within a cgroup's room left); None when unknown."""
    free = _meminfo().get("MemAvailable")
    bound, used = _cgroup_number("memory.max"), _cgroup_number("memory.current")
    if bound is not None and used is not None:
        free = min(free, bound - used) if free is not None else bound - used
    return free


def limit(environ: Mapping[str, str]) -> Limit:
    """What the jobs of a home may use: the settings, else this machine's figures."""
    problems = []
    millicpus, memory = machine_millicpus(), machine_memory()
    raw = environ.get(ENV_CPUS, "").strip()
    if raw:
        try:
            amount = quantity.parse(raw).amount
        except quantity.QuantityError:
            amount = Fraction(0)
        if amount > 0:
            millicpus = math.ceil(amount * _MILLI)
        else:
            problems.append(
                f"{ENV_CPUS}={raw!r} is not a number of CPUs greater than 0; this machine's "
                f"{millicpus / _MILLI:g} were used"
            )
    raw = environ.get(ENV_MEMORY, "").strip()
    if raw:
        try:
            amount = quantity.parse(raw).amount
        except quantity.QuantityError:
            amount = Fraction(0)
        if amount > 0:
            memory = math.ceil(amount)
        else:
            problems.append(
                f"{ENV_MEMORY}={raw!r} is not an amount of memory greater than 0 (8Gi, "
                f"500M); this machine's {memory >> 20} Mi were used"
            )
    return Limit(millicpus, memory, tuple(problems))


class _Entry(NamedTuple):
    running: bool
    key: str
    need: Need
    name: str


def _entry(name: str) -> _Entry | None:
    parts = name.split("_")
    if len(parts) != 5 or parts[0] not in ("w", "r") or not (parts[3] + parts[4]).isdigit():
        return None
    return _Entry(
        parts[0] == "r", f"{parts[1]}_{parts[2]}", Need(int(parts[3]), int(parts[4])), name
    )


def cpus_text(millicpus: int) -> str:
    return f"{millicpus / _MILLI:g}"


def gib(memory: int) -> str:
    return f"{memory / (1 << 30):.1f} Gi" if memory >= 1 << 30 else f"{memory >> 20} Mi"


class Share:
    """One job's share of the machine (the module's why): :meth:`take` until it returns None,
    :meth:`release` when the job ends or is suspended."""

    def __init__(self, home: Path, created_ts: float, uid: str, need: Need, bound: Limit) -> None:
        self.dir = home / "capacity"
        self.key = f"{created_ts:017.6f}_{uid.replace('_', '-')}"
        self.limit = bound
        # a job larger than the machine runs alone
        self.need = Need(min(need.millicpus, bound.millicpus), min(need.memory, bound.memory))
        self.asked = need
        self._fd: int | None = None
        self._name = ""
        self.running = False
        self._next = 0.0
        self._why = ""
        self.soon = False
        """Whether so few jobs wait before it that it may run once the running ones end."""

    def _names(self) -> list[str]:
        try:
            return sorted(os.listdir(self.dir))
        except FileNotFoundError:
            return []

    def _held(self, name: str) -> bool:
        """Whether the share ``name`` is held by a live process; a dead one's is removed."""
        try:
            fd = os.open(self.dir / name, os.O_RDONLY | os.O_NOFOLLOW)
        except OSError:
            return True  # renamed (it runs now) or removed meanwhile: read again next time
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError as e:
            return e.errno in (errno.EWOULDBLOCK, errno.EAGAIN)
        finally:
            os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(self.dir / name)
        return False

    def _join(self) -> None:
        """Add this job's waiting share: made under a temporary name, locked, then renamed, so
        that nobody sees it unlocked."""
        files.private_dirs(self.dir.parent, self.dir)
        tmp = self.dir / f".{self.key}"
        fd = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        self._fd = fd
        self._name = f"w_{self.key}_{self.need.millicpus}_{self.need.memory}"
        os.rename(tmp, self.dir / self._name)

    def take(self) -> str | None:
        """None once the job may start its pods; else why it waits (a sentence). Looks at the
        shares at most every :data:`RECHECK` seconds."""
        if self.running:
            return None
        now = time.monotonic()
        if now < self._next:
            return self._why
        self._next = now + RECHECK
        if self._fd is None:
            self._join()
        self._why = self._decide()
        return None if self.running else self._why

    def _waiting_message(self) -> str:
        mem = f" and {gib(self.need.memory)} of memory" if self.need.memory else ""
        return (
            f"this machine is busy: the job needs {cpus_text(self.need.millicpus)} CPU(s){mem}, "
            f"and the jobs of this home use at most {cpus_text(self.limit.millicpus)} CPU(s) and "
            f"{gib(self.limit.memory)} at once ({ENV_CPUS}, {ENV_MEMORY}); the first submitted "
            "start first"
        )

    def _decide(self) -> str:
        ahead = [
            e
            for e in map(_entry, self._names())
            if e is not None and not e.running and e.key < self.key
        ]
        # among the jobs that may run once the running ones end: its supervisor loads now
        self.soon = len(ahead) < max(1, self.limit.millicpus // max(self.need.millicpus, 1))
        if ahead and self._held(ahead[0].name):
            return self._waiting_message()
        lock = os.open(self.dir / ".lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX)
            found = [
                e for e in map(_entry, self._names()) if e is not None and e.name != self._name
            ]
            if any(not e.running and e.key < self.key and self._held(e.name) for e in found):
                return self._waiting_message()
            running = [e for e in found if e.running and self._held(e.name)]
            if running and not self._fits(running):
                return self._waiting_message()
            name = f"r_{self.key}_{self.need.millicpus}_{self.need.memory}"
            os.rename(self.dir / self._name, self.dir / name)
            self._name, self.running = name, True
            return ""
        finally:
            os.close(lock)

    def _fits(self, running: list[_Entry]) -> bool:
        cpus = sum(e.need.millicpus for e in running) + self.need.millicpus
        memory = sum(e.need.memory for e in running) + self.need.memory
        if cpus > self.limit.millicpus or memory > self.limit.memory:
            return False
        free = available_memory()
        return free is None or free - self.need.memory >= RESERVE

    def release(self) -> None:
        """Give the share back (the job ended, or was suspended: a resume waits again)."""
        if self._fd is None:
            return
        with contextlib.suppress(OSError):
            os.unlink(self.dir / self._name)
        os.close(self._fd)
        self._fd, self._name, self.running, self._next = None, "", False, 0.0
