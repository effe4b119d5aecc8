"""``trainjob version``, ``get jobs``, ``get runtimes`` and ``--help`` answered without typer: most of
their start-up.

Importing typer (and the click it carries, and the standard modules they pull in) and building
its command tree costs more CPU than the whole listing of a local home; a user types these two
commands most, and each time. :func:`run` takes a command line that is plainly one of them, in
the forms of the typer command (global ``--backend``/``--kubeconfig``/``--context`` before the
command, ``TRAINJOB_BACKEND``; then ``get jobs|job|trainjob|trainjobs``, names and ``-n``, ``-A``,
``-o``, ``-l``, ``--sort-by``, ``--no-headers``, ``-w``, each flag spelt as its ``--help`` shows;
``get runtimes|runtime|clustertrainingruntimes|trainingruntimes``, names, ``-n``, ``-o``,
``--no-headers``) and runs the very code the typer command runs
(:func:`trainjob.cli.listing.list_jobs`, :func:`~trainjob.cli.listing.list_runtimes`). Anything
else, ``--help``, an unknown flag, a flag without its value, a value that looks like a flag,
an unknown backend, ``get trainjob/NAME``: None, and typer parses it, with its own errors.
``tests/unit/cli/test_fast.py`` runs each form both ways and compares what is printed.

``trainjob [COMMAND...] --help`` (the command's words, then ``--help``, nothing else) prints
the screen typer prints, kept in ``help.json`` beside this module (written and checked by
:mod:`trainjob.cli.reference`), where click's would be 80 columns wide: on a terminal of 80
columns or more (``COLUMNS``, else the terminal's width, as :func:`shutil.get_terminal_size`
reads them), or a pipe. Typer prints any other (and builds the root's by importing every
command module).
"""

from __future__ import annotations

import os
import sys

from trainjob.cli import TARGET, Backend, guarded, resume_gc

JOBS = ("jobs", "job", "trainjob", "trainjobs")
"""``get``'s names for the jobs subcommand (cli/get.py registers the same)."""
RUNTIMES = ("runtimes", "runtime", "clustertrainingruntimes", "trainingruntimes")
"""``get``'s names for the runtimes subcommand (cli/get.py registers the same)."""

_GLOBAL = {"--backend": "backend", "--kubeconfig": "kubeconfig", "--context": "context"}
_VALUED = {
    "-n": "namespace", "--namespace": "namespace",
    "-o": "output", "--output": "output",
    "-l": "selector", "--selector": "selector",
    "--sort-by": "sort_by",
}  # fmt: skip
_FLAGS = {
    "-A": "all_namespaces", "--all-namespaces": "all_namespaces",
    "--no-headers": "no_headers",
    "-w": "watch_", "--watch": "watch_",
}  # fmt: skip
_RUNTIME_VALUED = {k: v for k, v in _VALUED.items() if v in ("namespace", "output")}
_RUNTIME_FLAGS = {"--no-headers": "no_headers"}
"""``get runtimes``' options: no ``-A``, ``-l``, ``--sort-by`` or ``-w`` (typer refuses them)."""


def _backend(value: str) -> Backend | None:
    """``--backend``'s value as typer matches it (case-insensitive), or None."""
    return next((b for b in Backend if b.value.casefold() == value.casefold()), None)


def _take(args: list[str], i: int, table: dict[str, str]) -> tuple[str, str, int] | None:
    """The option at ``args[i]`` of ``table`` (``--opt VALUE`` or ``--opt=VALUE``): its field,
    its value and the next index; None when it is none of them or its value is missing or
    looks like a flag (typer decides those)."""
    arg = args[i]
    name, eq, value = arg.partition("=")
    if eq and name.startswith("--") and name in table:
        return table[name], value, i + 1
    if arg in table and i + 1 < len(args) and not args[i + 1].startswith("-"):
        return table[arg], args[i + 1], i + 2
    return None


def _columns() -> int:
    """The terminal's width as :func:`shutil.get_terminal_size` reads it (``COLUMNS``, else
    stdout's terminal, else 80), without importing shutil."""
    try:
        columns = int(os.environ.get("COLUMNS", ""))
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):  # no stdout (None), not a terminal
            columns = 0
    return columns or 80


def _help(words: list[str]) -> int | None:
    """``trainjob *words --help`` from help.json, where its screen is the one typer prints."""
    if _columns() < 80:
        return None
    import json

    with open(os.path.join(os.path.dirname(__file__), "help.json"), encoding="utf-8") as f:
        screen = json.load(f).get(" ".join(words))
    if not isinstance(screen, str):
        return None
    sys.stdout.write(screen)
    return guarded(lambda: 0)  # flushed, and a reader gone is told apart as for a listing


def run(argv: list[str]) -> int | None:
    """Run ``argv`` here when it is a plain ``version``, ``get jobs``, ``get runtimes`` or
    ``--help``; its exit code, or None when typer should parse it."""
    if argv and argv[-1] == "--help" and not any(a.startswith("-") for a in argv[:-1]):
        return _help(argv[:-1])
    env = os.environ.get("TRAINJOB_BACKEND")
    backend = Backend.local if env is None else _backend(env)
    if backend is None:
        return None
    target: dict[str, str | None] = {"kubeconfig": None, "context": None}
    i = 0
    while i < len(argv) and argv[i].startswith("-"):
        got = _take(argv, i, _GLOBAL)
        if got is None:
            return None
        field, value, i = got
        if field == "backend":
            backend = _backend(value)
            if backend is None:
                return None
        else:
            target[field] = value
    rest = argv[i:]
    if rest == ["version"]:
        from trainjob import __version__
        from trainjob.api import constants as c

        sys.stdout.write(f"trainjob {__version__} ({c.API_VERSION})\n")
        return 0
    if len(rest) < 2 or rest[0] != "get" or rest[1] not in (*JOBS, *RUNTIMES):
        return None
    jobs = rest[1] in JOBS
    valued = _VALUED if jobs else _RUNTIME_VALUED
    flags = _FLAGS if jobs else _RUNTIME_FLAGS
    options: dict[str, str | bool | None] = {}
    names: list[str] = []
    j = 2
    while j < len(rest):
        arg = rest[j]
        if arg in flags:
            options[flags[arg]] = True
            j += 1
        elif arg.startswith("-"):
            got = _take(rest, j, valued)
            if got is None:
                return None
            field, value, j = got
            options[field] = value
        else:
            if "/" in arg:  # get trainjob/NAME names a kind: cli/get.py's TypeSlashName
                return None
            names.append(arg)
            j += 1
    TARGET.backend = backend
    TARGET.kubeconfig, TARGET.context = target["kubeconfig"], target["context"]
    if options.get("watch_"):
        resume_gc()  # a watch runs until Ctrl-C: the collector runs again

    def call() -> int:
        from trainjob.cli import listing

        if not jobs:
            listing.list_runtimes(
                names or None,
                _str(options.get("namespace")),
                _str(options.get("output")),
                bool(options.get("no_headers")),
            )
            return 0
        listing.list_jobs(
            names or None,
            _str(options.get("namespace")),
            bool(options.get("all_namespaces")),
            _str(options.get("output")),
            _str(options.get("selector")),
            _str(options.get("sort_by")),
            bool(options.get("no_headers")),
            bool(options.get("watch_")),
        )
        return 0

    return guarded(call)


def _str(value: str | bool | None) -> str | None:
    return value if isinstance(value, str) else None
