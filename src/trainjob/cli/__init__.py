"""The ``trainjob`` command line: kubectl-style verbs over the SDK.

:func:`main` runs a command: ``version`` and ``get jobs`` in their plain forms are answered by
:mod:`trainjob.cli.fast` without importing typer (most of a command's start-up), every other
command line by the typer application of :mod:`trainjob.cli.root`, where each command group
registers itself from its own module. :func:`guarded` is the one place that maps the exception
tree to exit codes: user errors print what kubectl would (``error: ...``, or ``The TrainJob "x" is
invalid: ...`` with one line per field error) on stderr and exit 1, with no traceback; anything
else is a bug and keeps its traceback. This module imports neither typer nor rich.
"""

from __future__ import annotations

import gc
import os
import sys
from enum import StrEnum

from trainjob import text
from trainjob.errors import ErrorList, InvalidError, TrainJobError

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (see trainjob.lazy)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

HELP_STYLE = None
"""typer's ``rich_markup_mode`` for every command: None is click's plain help, as kubectl's is
plain: no boxes, no ``<bool>`` after flags, and ``[step]`` in a help text stays text instead of
being taken for rich markup. Sub-apps (``get``, ``describe``) pass it too."""


class Backend(StrEnum):
    local = "local"
    container = "container"
    kubernetes = "kubernetes"


class Target:
    """Where the job commands act: this machine, or the cluster of a kubeconfig (and context)."""

    def __init__(
        self,
        backend: Backend = Backend.local,
        kubeconfig: str | None = None,
        context: str | None = None,
    ) -> None:
        self.backend = backend
        self.kubeconfig = kubeconfig
        self.context = context


TARGET = Target()


# Command modules, imported for their side effect of registering commands on ``app``.
COMMAND_MODULES = (
    "plan", "run", "jobs", "scale", "get", "describe", "controller", "crds", "completion",
    "dashboard",
)  # fmt: skip

COMMANDS = {
    "version": None,
    "plan": "plan",
    "run": "run",
    "get": "get",
    "describe": "describe",
    "logs": "jobs",
    "suspend": "jobs",
    "resume": "jobs",
    "delete": "jobs",
    "apply": "jobs",
    "scale": "scale",
    "controller": "controller",
    "crds": "crds",
    "completion": "completion",
    "dashboard": "dashboard",
}
"""Command -> the module that registers it (None: this one), so that ``trainjob get jobs`` imports
the job commands alone, not the controller (as pip's lazy command table). A command missing here,
or not found in its module, loads every module: the table can only make a start faster."""

GLOBAL_OPTIONS_WITH_VALUES = ("--backend", "--kubeconfig", "--context")


def command_of(argv: list[str]) -> str | None:
    """The command ``argv`` names (``get`` in ``--backend kubernetes get jobs``), or None."""
    args = iter(argv)
    for arg in args:
        if arg in GLOBAL_OPTIONS_WITH_VALUES:
            next(args, None)
        elif not arg.startswith("-"):
            return arg
    return None


def invalid_message(err: InvalidError) -> str:
    """An InvalidError exactly as kubectl prints an apiserver ``Invalid`` status.

    One field error: ``The TrainJob "x" is invalid: spec.trainer.numNodes: Invalid value: ...``.
    Several: the head line (ending in ``": "``), then one ``* field: ...`` line each; repeated
    lines are printed once.
    """
    kind = err.kind.split(".", 1)[0]
    name = text.printable(err.name)
    head = f'The {kind} "{name}" is invalid' if kind or err.name else "The request is invalid"
    lines = list(dict.fromkeys(text.printable(str(fe)) for fe in err.errors))
    if not lines:
        return head + "\n"
    if len(lines) == 1:
        return f"{head}: {lines[0]}\n"
    return f"{head}: \n" + "".join(f"* {line}\n" for line in lines)


def report(err: TrainJobError) -> None:
    """Print a user error on stderr as kubectl would: ``error: ...``, or the ``is invalid`` block
    (each of an ErrorList in turn). Control characters from the input are shown escaped."""
    if isinstance(err, ErrorList):
        for one in err.errors:
            report(one)
        return
    if isinstance(err, InvalidError):
        sys.stderr.write(invalid_message(err))
        return
    msg = text.printable(str(err))
    sys.stderr.write(msg if msg.startswith("error: ") else f"error: {msg}")
    sys.stderr.write("\n")


def guarded(call: Callable[[], int]) -> int:
    """Run a command; its exit code (0 ok, 1 user error, 130 interrupted; typer's usage errors,
    2, are mapped in :func:`trainjob.cli.root.run`)."""
    try:
        code = call()
        sys.stdout.flush()  # here, so that a reader gone (| head) is told apart below
        return code
    except BrokenPipeError:  # the reader left (trainjob get jobs | head): quietly, as kubectl
        _stdout_to_devnull()
        return 1
    except TrainJobError as e:
        report(e)
        return 1
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
    except SystemExit as e:
        if isinstance(e.code, int):
            return e.code
        return 0 if e.code is None else 1


def _stdout_to_devnull() -> None:
    """Point stdout at /dev/null, so that the interpreter's last flush of what the gone reader
    did not take raises nothing (Python's advice for SIGPIPE, docs: signal)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # not a file (a test's StringIO)
        pass


_held_gc = False
"""Whether :func:`main` holds the cycle collector off (it was on when main began)."""


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; return its exit code (0 ok, 1 user error, 2 usage error, 130 interrupted).

    The cycle collector is held off while the command starts: importing makes tens of thousands
    of objects that live as long as the process, and the collections they set off walked them
    all again, about a tenth of ``trainjob get jobs`` (benchmarks/cli_startup.py). A command that
    goes on after its start (every typer command's body, ``get -w``) lets it run again
    (:func:`resume_gc`); the collector is as it was when main returns. Run as the process's
    command line (``argv`` None: the console script, ``python -m trainjob``), whose end follows,
    main freezes what it made (:func:`gc.freeze`): the interpreter's last collection would walk
    it all again, another tenth."""
    global _held_gc
    collecting, held = gc.isenabled(), _held_gc
    gc.disable()
    _held_gc = collecting
    try:
        if not os.environ.get("_TRAINJOB_COMPLETE"):
            from trainjob.cli import fast

            code = fast.run(sys.argv[1:] if argv is None else argv)
            if code is not None:
                return code
        from trainjob.cli.root import run

        return run(argv)
    finally:
        _held_gc = held
        if collecting:
            gc.enable()
        if argv is None:
            gc.freeze()


def resume_gc() -> None:
    """Let the cycle collector run again where :func:`main` held it off: a command's start-up is
    over and its body may run long (a follow, a watch, the controller)."""
    if _held_gc:
        gc.enable()


_APP_NAMES = ("app", "options", "version", "usage_error", "_register", "_import")


def __getattr__(name: str) -> Any:
    """``trainjob.cli.root``'s names, imported on first use (``from trainjob.cli import app``)."""
    if name in _APP_NAMES:
        from trainjob.cli import root as application

        return getattr(application, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
