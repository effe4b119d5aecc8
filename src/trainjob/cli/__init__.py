"""The ``trainjob`` command line: kubectl-style verbs over the SDK.

Each command group lives in its own module and registers itself on :data:`app`. :func:`main` is the
one place that maps the exception tree to exit codes: user errors print what kubectl would
(``error: ...``, or ``The TrainJob "x" is invalid: ...`` with one line per field error) on stderr
and exit 1, with no traceback; anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import importlib
import os
import sys
from dataclasses import dataclass
from enum import StrEnum
from typing import Annotated

import typer

from trainjob import __version__, text
from trainjob.api import constants as c
from trainjob.cli import coercion
from trainjob.errors import ErrorList, InvalidError, TrainJobError

coercion.install()  # option values without pydantic: most of the start-up (cli/coercion.py)

HELP_STYLE = None
"""typer's ``rich_markup_mode`` for every command: None is click's plain help, as kubectl's is
plain: no boxes, no ``<bool>`` after flags, and ``[step]`` in a help text stays text instead of
being taken for rich markup. Sub-apps (``get``, ``describe``) pass it too."""

app = typer.Typer(
    name="trainjob",
    help="Run Kubeflow TrainJobs on this machine or a Kubernetes cluster.",
    no_args_is_help=True,
    add_completion=False,  # `trainjob completion bash|zsh|fish` instead (cli/completion.py)
    pretty_exceptions_enable=False,
    rich_markup_mode=HELP_STYLE,
)


class Backend(StrEnum):
    local = "local"
    container = "container"
    kubernetes = "kubernetes"


@dataclass
class Target:
    """Where the job commands act: this machine, or the cluster of a kubeconfig (and context)."""

    backend: Backend = Backend.local
    kubeconfig: str | None = None
    context: str | None = None


TARGET = Target()


@app.callback()
def options(
    backend: Annotated[
        Backend,
        typer.Option(
            "--backend",
            envvar="TRAINJOB_BACKEND",
            case_sensitive=False,
            help="Where jobs run: local (processes here), container (each pod a podman or docker "
            "container of its image, here; TRAINJOB_CONTAINER_RUNTIME picks one) or kubernetes "
            "(the kubeconfig's cluster).",
        ),
    ] = Backend.local,
    kubeconfig: Annotated[
        str | None,
        typer.Option("--kubeconfig", help="With --backend kubernetes: the kubeconfig file."),
    ] = None,
    context: Annotated[
        str | None,
        typer.Option("--context", help="With --backend kubernetes: the kubeconfig context."),
    ] = None,
) -> None:
    """Run Kubeflow TrainJobs on this machine or a Kubernetes cluster."""
    TARGET.backend, TARGET.kubeconfig, TARGET.context = backend, kubeconfig, context


# Command modules, imported for their side effect of registering commands on ``app``.
COMMAND_MODULES = (
    "plan", "run", "jobs", "get", "describe", "controller", "crds", "completion", "dashboard",
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
    "controller": "controller",
    "crds": "crds",
    "completion": "completion",
    "dashboard": "dashboard",
}
"""Command -> the module that registers it (None: this one), so that ``trainjob get jobs`` imports
the job commands alone, not the controller (as pip's lazy command table). A command missing here,
or not found in its module, loads every module: the table can only make a start faster."""

GLOBAL_OPTIONS_WITH_VALUES = ("--backend", "--kubeconfig", "--context")


def _import(name: str) -> None:
    try:
        importlib.import_module(f"trainjob.cli.{name}")
    except ModuleNotFoundError as e:
        if e.name != f"trainjob.cli.{name}":
            raise


def _register(command: str | None = None) -> None:
    """Import the module of ``command`` (every command module when None or unknown)."""
    if command in COMMANDS:
        module = COMMANDS[command]
        if module is not None:
            _import(module)
        registered = {c.name for c in app.registered_commands}
        registered |= {g.name for g in app.registered_groups}
        if command in registered or module is None:
            return
    for name in COMMAND_MODULES:
        _import(name)


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


@app.command()
def version() -> None:
    """Print the trainjob version and the Kubeflow Trainer API it speaks."""
    typer.echo(f"trainjob {__version__} ({c.API_VERSION})")


def usage_error(err: typer.TyperException) -> int:
    """A command-line mistake as kubectl prints one: ``error: unknown flag ...`` then where to
    read the usage (a help screen when no arguments were given: it is printed already).

    ``typer.TyperException`` is the public base of the usage errors of the click typer carries;
    the no-arguments one is told by its name, typer exporting no class for it."""
    if type(err).__name__ == "NoArgsIsHelpError":
        return err.exit_code
    msg = err.format_message()
    sys.stderr.write(f"error: {msg[:1].lower()}{msg[1:]}\n")
    ctx = getattr(err, "ctx", None)
    if ctx is not None:
        sys.stderr.write(f"See '{ctx.command_path} --help' for usage.\n")
    return err.exit_code


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; return its exit code (0 ok, 1 user error, 2 usage error, 130 interrupted)."""
    if os.environ.get("_TRAINJOB_COMPLETE"):  # a completion script asks (cli/completion.py)
        _register()
        from trainjob.cli import completion

        completion.enable()
    else:
        _register(command_of(sys.argv[1:] if argv is None else argv))
    try:
        code = app(args=argv, prog_name="trainjob", standalone_mode=False)
        return code if isinstance(code, int) and not isinstance(code, bool) else 0
    except typer.TyperException as e:
        return usage_error(e)
    except typer.Abort:
        print("error: aborted", file=sys.stderr)
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


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
