"""Why a job failed, for a person: which step and rank failed first, how, and its last log lines.

A Failed TrainJob's condition says what JobSet decided (``jobset failed due to reaching max number
of restarts``); what a user needs is the pod behind it: the first to fail (by its finish time; the
others were stopped because of it), its exit code or signal (a SIGKILL with no word in the log is
most often the kernel's OOM killer; on a cluster the kubelet says ``OOMKilled``), and the last
lines of its log. Built once over the job model and ``Executor.logs``, so ``describe``, ``run
--wait``, and the SDK's ``wait_for_job_status`` say the same on both backends. Every line is
:func:`trainjob.text.clean`: no terminal escape or control character from a log reaches a message.
"""

from __future__ import annotations

import signal
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from trainjob import text
from trainjob.executor import model as st
from trainjob.executor.steps import step_name

TAIL_LINES = 5
_LONGEST_LINE = 300
OOM_KILLED = "OOMKilled"
FIRST_FAILED = "; first failed: "
"""How the local backend's Failed message adds the pod that failed first to JobSet's words."""


@dataclass(frozen=True)
class Failure:
    """The first pod of a failed job to fail; ``tail`` the last lines of its log."""

    step: str
    pod: str
    rank: int | None
    exit_code: int | None
    signal: str
    oom: bool
    message: str
    tail: tuple[str, ...] = ()

    @property
    def how(self) -> str:
        """``exit code 137 (SIGKILL: out of memory (the kernel's OOM killer) or a kill -9)``."""
        if self.oom:
            return f"{OOM_KILLED}: out of memory (exit code {self.exit_code})"
        if self.exit_code is None:
            return "no exit code"
        out = f"exit code {self.exit_code}"
        if self.signal == "SIGKILL":
            out += " (SIGKILL: out of memory, the kernel's OOM killer, or a kill -9)"
        elif self.signal:
            out += f" ({self.signal})"
        return out

    def summary(self) -> str:
        """One line: ``step node-1 (rank 1) failed first: exit code 1; its log says: ...``."""
        who = f"step {self.step}" + (f" (rank {self.rank})" if self.rank is not None else "")
        said = self.message.split("; its log says: ", 1)
        line = f"{who} failed first: {self.how}"
        if len(said) == 2:
            line += f"; its log says: {said[1]}"
        return text.clean(line)

    def tail_text(self) -> str:
        """``last lines of node-1's log:`` and the lines, indented; "" without a log."""
        if not self.tail:
            return ""
        lines = "\n".join(f"  {ln}" for ln in self.tail)
        return f"last lines of {self.step}'s log:\n{lines}"

    def report(self, summary: bool = True) -> str:
        """:meth:`summary` (unless the message it goes into says it already), then
        :meth:`tail_text` (for errors and ``describe``)."""
        parts = [self.summary()] if summary else []
        if self.tail:
            parts.append(self.tail_text())
        return "\n".join(parts)


def says_first_failed(message: str) -> bool:
    """Whether a job's message already names its first failure (the local backend's does)."""
    return FIRST_FAILED in message


def first_failed(state: st.JobState) -> st.PodState | None:
    """The pod that failed first (earliest finish, then step order), of the pods that ended
    with a non-zero exit code or a message saying why; None when none did."""
    failed = [
        p
        for p in state.pods
        if p.phase == st.POD_FAILED and ((p.exit_code or 0) != 0 or p.message) and p.runs
    ]
    if not failed:
        return None
    with_code = [p for p in failed if p.exit_code] or failed
    return min(with_code, key=lambda p: (p.finished or "~", p.step))


def _signal_name(code: int | None) -> str:
    if code is None or code <= 128:
        return ""
    try:
        return signal.Signals(code - 128).name
    except ValueError:
        return ""


def failure(
    state: st.JobState, read_tail: Callable[[st.PodState], Iterable[str]] | None = None
) -> Failure | None:
    """The :class:`Failure` of a Failed ``state`` (None otherwise, or when no pod failed),
    with the last :data:`TAIL_LINES` lines ``read_tail`` gives for its pod (errors ignored: the
    log may be gone with its pod)."""
    if state.phase != st.FAILED:
        return None
    pod = first_failed(state)
    if pod is None:
        return None
    tail: list[str] = []
    if read_tail is not None:
        try:
            tail = [ln.rstrip("\n") for ln in read_tail(pod)]
        except Exception:  # a missing log must not hide the failure
            tail = []
    tail = [text.clean(ln)[:_LONGEST_LINE] for ln in tail if ln.strip()][-TAIL_LINES:]
    return Failure(
        step=step_name(*pod.step),
        pod=pod.name,
        rank=pod.index if pod.job == "node" else None,
        exit_code=pod.exit_code,
        signal=_signal_name(pod.exit_code),
        oom=OOM_KILLED in pod.message,
        message=text.clean(pod.message),
        tail=tuple(tail),
    )
