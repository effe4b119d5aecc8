"""One pod, run here: its init containers one after another, then its containers together.

Each container is a process leading its own session, marked with its owner
(:mod:`trainjob.local.state.ptree`) so that every process it starts, in any session, is found and
stopped with it; stdout and stderr go to the pod's log file. A container's leftovers are killed
when it exits (as its cgroup would be on a cluster); stopping a pod is SIGTERM to all its
processes, its grace period (``terminationGracePeriodSeconds``, 3 s here by default), then
SIGKILL. The pod ends when all its containers have ended: Succeeded if every one exited 0, else
Failed with the first non-zero exit code (a signal ``N`` is reported as ``128 + N``, as the
kubelet does). Used by :mod:`trainjob.local.job.supervisor`.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import IO

from trainjob import text
from trainjob.core import jobset
from trainjob.local.job.pods import LocalContainer, LocalPod
from trainjob.local.job.probes import Outcome, PodProbes
from trainjob.local.state import files, logfiles, procs, ptree
from trainjob.local.state import home as homes

PROBE_KILL_GRACE = 3.0  # SIGTERM, then SIGKILL: the local backend's grace everywhere
SHELLS = {"sh", "bash", "dash", "zsh", "ksh"}
SCRIPT_ENV = "TRAINJOB_COMMAND_FILE"
DEFAULT_GRACE = PROBE_KILL_GRACE  # terminationGracePeriodSeconds when a pod sets none (30 there)


def grace_of(spec: dict[str, object]) -> float:
    """A pod's ``terminationGracePeriodSeconds``, else the local default."""
    value = spec.get("terminationGracePeriodSeconds")
    return float(value) if isinstance(value, int | float) and value >= 0 else DEFAULT_GRACE


def exit_code(returncode: int) -> int:
    """A process's return code as a container's exit code (signal N -> 128 + N)."""
    return 128 - returncode if returncode < 0 else returncode


_EXCEPTION = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception)(: .*)?$")
# torchrun's agent reporting a failed rank: what the rank said is above it.
_TORCHRUN_FAILED = re.compile(r"torch/distributed/elastic/.* failed \(exitcode: ")
_TAIL = 65536
_LONGEST = 300


TORCH_EXIT_ABORT = "terminate called without an active exception"
TORCH_EXIT_HINT = (
    f"{TORCH_EXIT_ABORT}: torch 2.15 aborted at interpreter exit, after the script's last line "
    "(a gloo thread; trainjob.trainers.gloo_exit.register() prevents it: see docs/local-backend.md)"
)
"""A rank's last words when torch 2.15 aborts a finished DDP run (trainjob.trainers.gloo_exit),
and what the failed pod says instead, so its message names the cause and the fix."""


# torchrun's report of a rank it lost: "... failed (exitcode: -9) local_rank: 1 (pid: 12) ..."
_TORCHRUN_RANK = re.compile(r"failed \(exitcode: (-?\d+)\) local_rank: (\d+)")
_TORCHRUN_ROOT_RANK = re.compile(r"^rank\s*:\s*(\d+) \(local_rank: (\d+)\)")
_TORCHRUN_SIGNAL = re.compile(r"Signal (\d+) \((SIG[A-Z0-9]+)\) received by PID")
# Signals whose victim prints nothing about them: its last line is not why it ended.
_SILENT_SIGNALS = {signal.SIGKILL, signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT}


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _rank_killed(lines: list[str]) -> str:
    """torchrun's verdict on a rank a silent signal ended ("rank 1 (local rank 1) was killed by
    SIGKILL"), from its failure report; "" when none was (a SIGABRT prints its own reason)."""
    silent = {int(s) for s in _SILENT_SIGNALS}
    rank = local = ""
    for ln in lines:
        m = _TORCHRUN_ROOT_RANK.match(ln)
        if m:
            rank, local = m.groups()
        m = _TORCHRUN_SIGNAL.search(ln)
        if m and rank and int(m.group(1)) in silent:
            return f"rank {rank} (local rank {local}) was killed by {m.group(2)}"
    for ln in lines:
        m = _TORCHRUN_RANK.search(ln)
        if m and -int(m.group(1)) in silent:
            return f"local rank {m.group(2)} was killed by {_signal_name(-int(m.group(1)))}"
    return ""


def log_says(log: Path, code: int = 1) -> str:
    """What a failed container's log says went wrong, as kubelet's FallbackToLogsOnError would.

    In the log's tail, up to where torchrun reports a failed rank: the last Python exception
    line, else the last line that is not a rule of ``=``/``-``; "" when empty or unreadable. A
    rank that torchrun reports killed by a signal is named with it. When the container itself
    (exit ``code``) was ended by a signal that lets it print nothing (SIGKILL, SIGTERM...), only
    an exception line counts: its last line (``step 10``) is not why it ended. Terminal escapes
    are dropped and control characters escaped (the line goes into a status and ``describe``).
    """
    try:
        with log.open("rb") as f:
            f.seek(max(0, f.seek(0, 2) - _TAIL))
            lines = [ln.strip() for ln in f.read().decode(errors="replace").splitlines()]
    except OSError:
        return ""
    lines = [text.clean(ln).strip() for ln in lines]
    killed = _rank_killed(lines)
    if killed:
        return killed
    for i, ln in enumerate(lines):
        if _TORCHRUN_FAILED.search(ln):
            lines = lines[:i] or lines
            break
    lines = [ln for ln in lines if ln.strip("=-_*#~ ")]
    errors = [ln for ln in lines if _EXCEPTION.match(ln)]
    silent = code > 128 and (code - 128) in {int(s) for s in _SILENT_SIGNALS}
    said = (errors or ([] if silent else lines) or [""])[-1]
    if said == TORCH_EXIT_ABORT:
        return TORCH_EXIT_HINT
    return said if len(said) <= _LONGEST else said[: _LONGEST - 3] + "..."


def failure_message(run: PodRun, code: int) -> str:
    """Why a pod failed, for its status, its event and the job's message: which container, its
    exit, why it was killed, what its log says, and a full disk."""
    what = f'container "{run.failed_container}" failed: {describe_exit(code)}'
    if run.failed_container in run.killed_why:
        what += f" ({run.killed_why[run.failed_container]})"
    said = log_says(run.log, code)
    return what + (f"; its log says: {said}" if said else "") + homes.disk_full_note(run.log.parent)


def describe_exit(code: int) -> str:
    if code > 128:
        try:
            return f"exit code {code} (killed by {signal.Signals(code - 128).name})"
        except ValueError:
            pass
    return f"exit code {code}"


class PodRun:
    """The processes of one pod. Call :meth:`start`, then :meth:`poll` until :attr:`done`."""

    def __init__(
        self,
        pod: LocalPod,
        log: Path,
        probe_pool: ThreadPoolExecutor | None = None,
        on_exit: Callable[[LocalContainer, int | None], str] | None = None,
    ) -> None:
        self.pod = pod
        self.log = log
        self.procs: list[subprocess.Popen[bytes]] = []
        self.stage = -1  # index into init containers; len(inits) = main containers
        self.exit_code: int | None = None
        self.failed_container = ""
        # container -> why it ended, when known: a probe had it killed, its command is not in
        # its image (said by ``on_exit``)
        self.killed_why: dict[str, str] = {}
        self.probes: PodProbes | None = None
        self._probe_pool = probe_pool
        self._sigkill_at: dict[int, float] = {}
        self._out: IO[bytes] | None = None
        self._logged = 0  # the log's size at its last growth record
        labels = pod.template.labels
        self.owner = f"{labels.get(jobset.LABEL_JOBSET_UID, '')}/{pod.template.name}/"
        self.grace = grace_of(pod.template.spec)
        self.seen: ptree.Procs = {}  # every process of the pod seen so far (pid -> start time)
        self._cleaned: set[int] = set()  # containers (their Popen) whose leftovers were killed
        # Called once for each container whose process has ended (its return code, None when it
        # could not be reaped): the container runner removes the container there, and may say
        # why it ended (trainjob.local.job.runner). Processes need nothing more.
        self._on_exit = on_exit

    @property
    def done(self) -> bool:
        return self.exit_code is not None

    def note_log_growth(self) -> None:
        """Record when the log grew (``logs --timestamps``; :mod:`trainjob.local.state.logfiles`)."""
        if self._out is None:
            return
        try:
            size = os.fstat(self._out.fileno()).st_size
        except (OSError, ValueError):
            return
        self._logged = logfiles.note_growth(self.log, size, self._logged)

    @property
    def leader(self) -> subprocess.Popen[bytes] | None:
        return self.procs[0] if self.procs else None

    def start(self) -> None:
        job_dir = self.log.parent.parent  # logs/ is in the job's directory, made by the executor
        files.private_dirs(job_dir, self.log.parent)
        files.private_dirs(job_dir, job_dir / "tmp")  # TMPDIR and TRAINJOB_JOB_TMP of the pods
        self._out = os.fdopen(files.open_private(self.log), "ab", buffering=0)
        self._advance()

    def _spawn(self, ctrs: tuple[LocalContainer, ...]) -> None:
        assert self._out is not None
        started = []
        for c in ctrs:
            argv, env = self._out_of_argv(c)
            env[ptree.OWNER_ENV] = self.owner + c.name
            started.append(procs.spawn(argv, env, c.cwd, self._out))
        self.procs = started

    def _out_of_argv(self, c: LocalContainer) -> tuple[list[str], dict[str, str]]:
        """A shell's ``-c`` script kept out of the process table, where every local user reads
        it (``ps``): written to a 0600 file of the job and sourced from it (``. "$FILE"``), so
        ``$0``, the arguments after it and the script's behaviour stay the same. A
        CustomTrainer's function and its ``func_args`` travel in such a script."""
        argv, env = list(c.argv), dict(c.env)
        if len(argv) < 3 or Path(argv[0]).name not in SHELLS or argv[1] != "-c":
            return argv, env
        folder = self.log.parent.parent / "tmp" / "commands"
        files.private_dirs(self.log.parent.parent, folder)
        script = folder / f"{self.pod.template.name}-{c.name}.sh"
        files.write_private(script, argv[2].encode())
        env[SCRIPT_ENV] = str(script)
        return [argv[0], "-c", f'. "${SCRIPT_ENV}"', *argv[3:]], env

    def track(self, tab: dict[int, ptree.Proc]) -> None:
        """Remember the pod's processes now (its containers' trees and what carries its mark),
        so that one that later cleared its environment and left its parent is still known."""
        self.seen = ptree.alive(self.seen, tab)
        self.seen.update(self.processes(tab))

    def processes(self, tab: dict[int, ptree.Proc] | None = None) -> ptree.Procs:
        """Every live process of the pod: its containers, their descendants, those with its mark
        and those seen before."""
        tab = ptree.table() if tab is None else tab
        leaders = {p.pid: tab[p.pid].start for p in self.procs if p.pid in tab}
        found = {**leaders, **ptree.descendants(leaders, tab), **ptree.owned(self.owner, tab)}
        found.update(ptree.alive(self.seen, tab))
        return found

    def _leftovers(self, p: subprocess.Popen[bytes], name: str) -> None:
        """A container's process has exited: SIGKILL whatever it left (its group, its
        descendants, anything with its mark)."""
        procs.kill_group(p.pid)
        tab = ptree.table()
        left = {**ptree.descendants([p.pid], tab), **ptree.owned(self.owner + name, tab)}
        ptree.end(left, grace=0)

    def _exited(self, p: subprocess.Popen[bytes], ctr: LocalContainer) -> None:
        """Container ``ctr`` (process ``p``) has ended: what it left is killed, once."""
        if id(p) in self._cleaned:
            return
        self._cleaned.add(id(p))
        self._leftovers(p, ctr.name)
        if self._on_exit is not None:
            why = self._on_exit(ctr, p.returncode)
            if why and ctr.name not in self.killed_why:
                self.killed_why[ctr.name] = why

    def _advance(self) -> None:
        inits = self.pod.init_containers
        self.stage += 1
        if self.stage < len(inits):
            self._spawn((inits[self.stage],))
        elif self.pod.containers:
            self._spawn(self.pod.containers)
            self._start_probes()
        else:
            self._finish(0)

    def _start_probes(self) -> None:
        checks = [c.probes for c in self.pod.containers if c.probes and c.probes.probes]
        if checks and self._probe_pool is not None:
            envs = {c.name: (c.env, c.cwd) for c in self.pod.containers}
            self.probes = PodProbes(checks, envs, self._probe_pool)

    @property
    def in_main_stage(self) -> bool:
        return not self.done and self.stage >= len(self.pod.init_containers)

    @property
    def ready(self) -> bool:
        """The pod's Ready condition: its main containers run and pass their readiness probes."""
        if not self.in_main_stage:
            return False
        if self.probes is not None:
            return self.probes.ready
        return all(p.poll() is None for p in self.procs)

    def tick_probes(self) -> Outcome | None:
        """Run the pod's due probes; kill the containers whose liveness/startup probe failed."""
        if self.probes is None or not self.in_main_stage:
            return None
        for ctr, p in zip(self.pod.containers, self.procs, strict=True):
            if p.poll() is not None:
                self.probes.container_exited(ctr.name)
        out = self.probes.tick()
        for name, why in out.kill:
            self.kill_container(name, why)
        return out

    def kill_container(self, name: str, why: str) -> None:
        """SIGTERM one main container's processes; SIGKILL after the grace (from :meth:`poll`)."""
        for i, (ctr, p) in enumerate(zip(self.pod.containers, self.procs, strict=True)):
            if ctr.name == name and p.poll() is None:
                self.killed_why[name] = why
                procs.kill_group(p.pid, signal.SIGTERM)
                tab = ptree.table()
                mine = {**ptree.descendants([p.pid], tab), **ptree.owned(self.owner + name, tab)}
                ptree.signal_all(mine, signal.SIGTERM)
                self._sigkill_at[i] = time.monotonic() + PROBE_KILL_GRACE

    def _finish(self, code: int) -> None:
        self.exit_code = code
        self.procs = []
        if self._out is not None:
            self._out.close()
            self._out = None

    def _containers_now(self) -> tuple[LocalContainer, ...]:
        inits = self.pod.init_containers
        return (inits[self.stage],) if self.stage < len(inits) else self.pod.containers

    def poll(self) -> bool:
        """Reap exited processes and move on; whether the pod has just ended."""
        if self.done or not self.procs:
            return False
        for i, at in list(self._sigkill_at.items()):
            if time.monotonic() >= at:
                procs.kill_group(self.procs[i].pid, signal.SIGKILL)
                del self._sigkill_at[i]
        codes = [p.poll() for p in self.procs]
        for p, rc, ctr in zip(self.procs, codes, self._containers_now(), strict=True):
            if rc is not None:
                self._exited(p, ctr)
        if any(rc is None for rc in codes):
            # A failed container fails the pod now only for init containers (sequential).
            return False
        ctrs = self._containers_now()
        for ctr, rc in zip(ctrs, codes, strict=True):
            assert rc is not None
            if rc != 0:
                self.failed_container = ctr.name
                self._finish(exit_code(rc))
                return True
        if self.stage < len(self.pod.init_containers):
            self._advance()
            return self.done
        self._finish(0)
        return True

    def running(self) -> bool:
        return any(p.poll() is None for p in self.procs)

    def terminate(self) -> None:
        """SIGTERM to every process of the pod."""
        ptree.signal_all(self.processes(), signal.SIGTERM)
        for p in self.procs:
            procs.kill_group(p.pid, signal.SIGTERM)

    def kill(self, grace: float | None = None) -> None:
        """Stop every process of the pod: SIGTERM, its grace period, then SIGKILL."""
        stop_all([self], self.grace if grace is None else grace)

    def _reap(self) -> None:
        for p in self.procs:
            procs.kill_group(p.pid, signal.SIGKILL)
        for p in self.procs:
            with contextlib.suppress(subprocess.TimeoutExpired):
                p.wait(timeout=5)
        if self.procs:
            for p, ctr in zip(self.procs, self._containers_now(), strict=True):
                self._exited(p, ctr)
        rc = self.procs[0].returncode if self.procs else 0
        self._finish(exit_code(rc if rc is not None else -signal.SIGKILL))


def stop_all(runs: Iterable[PodRun], grace: float | None = None) -> None:
    """Stop pods together: SIGTERM to every process of every pod, then SIGKILL to what still runs
    after one grace period (the longest of theirs, or ``grace``), not one per pod: a suspend of
    many pods that ignore SIGTERM takes one grace period."""
    live = [r for r in runs if not r.done]
    if not live:
        return
    wait = max(r.grace for r in live) if grace is None else grace
    tab = ptree.table()
    targets: ptree.Procs = {}
    for r in live:
        targets.update(r.processes(tab))
    for r in live:
        for p in r.procs:
            procs.kill_group(p.pid, signal.SIGTERM if wait > 0 else signal.SIGKILL)
    ptree.end(targets, wait)
    # What they started meanwhile, and what left its parent after SIGTERM.
    tab = ptree.table()
    late: ptree.Procs = {}
    for r in live:
        late.update(r.processes(tab))
    ptree.end(late, grace=0)
    for r in live:
        r._reap()
