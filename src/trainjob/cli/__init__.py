"""The ``trainjob`` command line: kubectl-style verbs over the SDK.

Each command group lives in its own module and registers itself on :data:`app`. :func:`main` is the
one place that maps the exception tree to exit codes: user errors print ``error: ...`` lines on
stderr and exit 1, with no traceback; anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import importlib
import sys

import typer

from trainjob.errors import InvalidError, TrainJobError

app = typer.Typer(
    name="trainjob",
    help="Run Kubeflow TrainJobs on this machine or a Kubernetes cluster.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

# Command modules, imported for their side effect of registering commands on ``app``.
COMMAND_MODULES = ("plan", "jobs", "controller")


def _register() -> None:
    for name in COMMAND_MODULES:
        try:
            importlib.import_module(f"trainjob.cli.{name}")
        except ModuleNotFoundError as e:
            if e.name != f"trainjob.cli.{name}":
                raise


def report(err: TrainJobError) -> None:
    """Print a user error kubectl-style: one ``error:`` line, then one line per field error."""
    if isinstance(err, InvalidError):
        head = f'The {err.kind} "{err.name}" is invalid:' if err.kind else "invalid input:"
        print(f"error: {head}", file=sys.stderr)
        for fe in err.errors:
            print(f"* {fe}", file=sys.stderr)
    else:
        print(f"error: {err}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; return its exit code (0 ok, 1 user error, 2 usage error, 130 interrupted)."""
    _register()
    try:
        app(args=argv)
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
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
