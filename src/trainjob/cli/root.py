"""The typer application: the root command, its global options, and the lazy command table.

Each command group lives in its own module and registers itself on :data:`app`;
:func:`_register` imports only the module of the command asked for (``COMMANDS`` in
:mod:`trainjob.cli`), so that ``trainjob logs`` never imports the controller. :func:`run` parses
the command line with typer and maps typer's usage errors to kubectl's lines (exit 2); the other
exceptions are mapped by :func:`trainjob.cli.guarded`, as for the commands :mod:`trainjob.cli.fast`
answers without typer.
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import Annotated

import typer

from trainjob import __version__
from trainjob.api import constants as c
from trainjob.cli import (
    COMMAND_MODULES,
    COMMANDS,
    HELP_STYLE,
    TARGET,
    Backend,
    coercion,
    command_of,
    guarded,
    labels,
    resume_gc,
)

coercion.install()  # option values without pydantic: most of the start-up (cli/coercion.py)
labels.install()  # help texts label values as kubectl does: NAME, N, FILE (cli/labels.py)

app = typer.Typer(
    name="trainjob",
    help="Run Kubeflow TrainJobs on this machine or a Kubernetes cluster.",
    no_args_is_help=True,
    add_completion=False,  # `trainjob completion bash|zsh|fish` instead (cli/completion.py)
    pretty_exceptions_enable=False,
    rich_markup_mode=HELP_STYLE,
)


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
    # the help screen lists commands as registered: in COMMAND_MODULES' order, whichever command
    # this process ran first (`main(["controller", ...])` then `main(["--help"])` in one process)
    rank = {f"trainjob.cli.{name}": i for i, name in enumerate(COMMAND_MODULES)}
    app.registered_commands.sort(key=lambda info: rank.get(info.callback.__module__, -1))


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


def run(argv: list[str] | None = None) -> int:
    """Parse ``argv`` (default ``sys.argv[1:]``) with typer and run the command it names."""
    if os.environ.get("_TRAINJOB_COMPLETE"):  # a completion script asks (cli/completion.py)
        _register()
        from trainjob.cli import completion

        completion.enable()
    else:
        _register(command_of(sys.argv[1:] if argv is None else argv))

    def call() -> int:
        resume_gc()  # the imports are done: the command's body may run long
        try:
            code = app(args=argv, prog_name="trainjob", standalone_mode=False)
        except typer.TyperException as e:
            return usage_error(e)
        except typer.Abort:
            print("error: aborted", file=sys.stderr)
            return 1
        return code if isinstance(code, int) and not isinstance(code, bool) else 0

    return guarded(call)
