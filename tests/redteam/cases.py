"""The red team's vocabulary: a case, what it found, and the helpers that run the CLI and the SDK.

A bad *input* ends as a clear error (exit 1 and kubectl-style lines on stderr, or a ValueError /
TypeError from the SDK, no traceback, nothing stored or left running), a traceback, a hang (the
harness's timeout) or wrongly accepted. A *fault* is survived (nothing lost, nothing left running,
a clear line where the user must act) or not.
"""

from __future__ import annotations

import contextlib
import io
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

CLASSES = {
    1: "nothing outlives its job",
    2: "one validation path",
    3: "caps and apimachinery rules",
    4: "SDK type checks",
    5: "bounded reads, streamed logs",
    6: "the store",
    7: "local file safety",
    8: "secrets and leftovers",
    9: "the webhook server",
    10: "honest messages",
    11: "initializers",
}


class Verdict(StrEnum):
    CLEAR = "clear error"
    TRACEBACK = "traceback"
    HANG = "hang"
    ACCEPTED = "wrongly accepted"
    SURVIVED = "survived"
    LOST = "not survived"


@dataclass(frozen=True)
class Outcome:
    verdict: Verdict
    detail: str = ""  # the error text (inputs), or what went wrong (faults)


@dataclass(frozen=True)
class Case:
    """One bad input or fault. ``run(workdir)`` returns its outcome; it may raise (a traceback)."""

    id: str
    cls: int
    kind: str  # "input" | "fault"
    run: Callable[[Path], Outcome]
    tags: frozenset[str] = field(default_factory=frozenset)  # "slow": a real job runs


class Failed(AssertionError):
    """A fault case found the fault not survived (its message says what was lost)."""


# -- running the CLI in-process ---------------------------------------------------------------


@dataclass(frozen=True)
class CliResult:
    code: int
    out: str
    err: str


@contextlib.contextmanager
def environment(**env: str | None) -> Iterator[None]:
    old = {k: os.environ.get(k) for k in env}
    try:
        for k, v in env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def cli(argv: list[str], home: Path, stdin: str | None = None) -> CliResult:
    """``trainjob ARGV`` in this process with ``TRAINJOB_HOME=home``: its exit code and output."""
    import sys

    from trainjob.cli import main

    out, err = io.StringIO(), io.StringIO()
    old_stdin = sys.stdin
    try:
        if stdin is not None:
            sys.stdin = io.StringIO(stdin)
        with (
            environment(TRAINJOB_HOME=str(home), TRAINJOB_BACKEND=None, NO_COLOR="1"),
            contextlib.redirect_stdout(out),
            contextlib.redirect_stderr(err),
        ):
            code = main(argv)
    finally:
        sys.stdin = old_stdin
    return CliResult(code, out.getvalue(), err.getvalue())


def stored_jobs(home: Path) -> list[tuple[str, str]]:
    """(namespace, name) of every job in ``home``'s store (read without the executor)."""
    import sqlite3

    db = home / "trainjob.db"
    if not db.is_file():
        return []
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return [(r[0], r[1]) for r in con.execute("SELECT namespace, name FROM jobs")]
    except sqlite3.Error:
        return []
    finally:
        con.close()


def clean_up(home: Path) -> None:
    """Delete every job the case left in ``home`` (stopping its processes)."""
    jobs = stored_jobs(home)
    if not jobs:
        return
    from trainjob.local import LocalExecutor

    ex = LocalExecutor(home)
    for ns, name in jobs:
        with contextlib.suppress(Exception):
            ex.delete(name, ns)


def judge_cli(res: CliResult, home: Path) -> Outcome:
    """A CLI run on bad input: a clear error is exit 1, kubectl-style stderr, nothing stored."""
    accepted = stored_jobs(home)
    clean_up(home)
    if "Traceback" in res.err:
        return Outcome(Verdict.TRACEBACK, res.err.strip().splitlines()[-1])
    if res.code == 0 or accepted:
        return Outcome(Verdict.ACCEPTED, res.out.strip() or str(accepted))
    text = res.err
    lines = text.splitlines()
    clear = (
        res.code == 1
        and lines
        and (lines[0].startswith("error: ") or " is invalid" in lines[0])
        and "\0" not in text
        and "\x1b" not in text
    )
    return Outcome(Verdict.CLEAR if clear else Verdict.TRACEBACK, text)


def judge_sdk(call: Callable[[], Any], home: Path) -> Outcome:
    """An SDK call on bad arguments: a clear error is a ValueError/TypeError, nothing stored."""
    try:
        result = call()
    except (ValueError, TypeError) as e:
        accepted = stored_jobs(home)
        clean_up(home)
        if accepted:
            return Outcome(Verdict.ACCEPTED, f"{type(e).__name__}: {e} (but stored {accepted})")
        return Outcome(Verdict.CLEAR, f"{type(e).__name__}: {e}")
    except RuntimeError as e:
        # Upstream's documented error for an object the backend does not have ("TrainJob
        # default/x not found"): clear when it is one line naming it.
        clean_up(home)
        text = str(e)
        clear = "not found" in text and "\n" not in text and "\0" not in text
        return Outcome(Verdict.CLEAR if clear else Verdict.TRACEBACK, f"RuntimeError: {text}")
    except Exception as e:
        clean_up(home)
        return Outcome(Verdict.TRACEBACK, f"{type(e).__name__}: {e}")
    else:
        if hasattr(result, "__next__"):  # a generator: the error comes on the first item
            return judge_sdk(lambda: next(result, None), home)
        clean_up(home)
        return Outcome(Verdict.ACCEPTED, repr(result)[:200])
