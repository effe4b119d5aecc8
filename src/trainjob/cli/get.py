"""``trainjob get jobs|runtimes``: what kubectl get prints (``describe``: ``cli/describe.py``).

``get jobs [NAME...] [-A] [-o wide|json|yaml|name] [-w]``: NAME STATUS RUNTIME NODES RESTARTS
PROGRESS ETA AGE (NAMESPACE first with ``-A``; STARTED DURATION REASON LOSS with ``-o wide``;
PROGRESS, ETA and LOSS are what the training last reported, ``status.trainerStatus``, the ETA
counted down since), from one listing of the
backend (:meth:`trainjob.executor.base.Executor.states`); ``-w`` prints a job's row again each
time its status, phase condition, restarts or progress report change
(:meth:`~trainjob.executor.base.Executor.watch_states`) and its row reads differently, the clocks aside.
``get runtimes``: NAME KIND FRAMEWORK NODES (IMAGE with ``-o wide``).

Registered on :data:`trainjob.cli.root.app`; acts through the executor of :func:`trainjob.cli.output.
executor` only, so every backend prints the same. ``get jobs``' body is
:func:`trainjob.cli.listing.list_jobs`, which :mod:`trainjob.cli.fast` also runs without typer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer
from typer.core import TyperGroup

from trainjob.cli import HELP_STYLE, listing
from trainjob.cli.options import Namespace, OutputFormat
from trainjob.cli.root import app
from trainjob.errors import TrainJobError

if TYPE_CHECKING:  # the API models (pydantic) and the executors load when a command uses them
    pass

KINDS = {
    "jobs": ("job", "jobs", "trainjob", "trainjobs", "tj"),
    "runtimes": (
        "runtime",
        "runtimes",
        "clustertrainingruntime",
        "clustertrainingruntimes",
        "trainingruntime",
        "trainingruntimes",
    ),
    "optimizationjobs": ("optimizationjob", "optimizationjobs", "oj"),
}
"""The subcommand of ``get`` and ``describe`` for each name kubectl users give a kind."""


def _kind_of(word: str) -> str | None:
    word = word.lower().split(".", 1)[0]  # trainjobs.trainer.kubeflow.org
    return next((cmd for cmd, names in KINDS.items() if word in names), None)


class TypeSlashName(TyperGroup):
    """``get trainjob/NAME`` (or ``runtime/NAME``, several of one kind) as kubectl takes it:
    the kind before the slash picks the subcommand, the names after it are its arguments."""

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        if args and "/" in args[0] and not args[0].startswith("-"):
            kind = args[0].split("/", 1)[0]
            cmd = _kind_of(kind)
            if cmd is None or cmd not in self.commands:
                raise TrainJobError(f'the server doesn\'t have a resource type "{kind}"')
            names = []
            for arg in args:
                if "/" in arg and not arg.startswith("-"):
                    k, _, n = arg.partition("/")
                    if _kind_of(k) != cmd:
                        raise TrainJobError(
                            f"{arg}: one kind at a time here ({args[0].split('/')[0]}/NAME ...)"
                        )
                    names.append(n)
                else:
                    names.append(arg)
            args = [cmd, *names]
        return super().resolve_command(ctx, args)


get_app = typer.Typer(
    help="Display jobs, runtimes or OptimizationJobs (also as kubectl: get trainjob/NAME).",
    no_args_is_help=True,
    rich_markup_mode=HELP_STYLE,
    cls=TypeSlashName,
)
app.add_typer(get_app, name="get")


Selector = Annotated[
    str | None,
    typer.Option(
        "--selector",
        "-l",
        metavar="SELECTOR",
        help="Only jobs whose labels match, e.g. -l team=ml,env!=prod,'tier in (a,b)'.",
    ),
]
SortBy = Annotated[
    str | None,
    typer.Option(
        "--sort-by",
        metavar="JSONPATH",
        help="Sort by a field of the TrainJob, e.g. .metadata.creationTimestamp or .metadata.name.",
    ),
]
NoHeaders = Annotated[
    bool, typer.Option("--no-headers", help="Print the table without its header line.")
]


@get_app.command("jobs")
def get_jobs(
    names: Annotated[list[str] | None, typer.Argument(help="Job names (all if none).")] = None,
    namespace: Namespace = None,
    all_namespaces: Annotated[
        bool, typer.Option("--all-namespaces", "-A", help="Jobs of every namespace.")
    ] = False,
    output: OutputFormat = None,
    selector: Selector = None,
    sort_by: SortBy = None,
    no_headers: NoHeaders = False,
    watch_: Annotated[
        bool,
        typer.Option(
            "--watch", "-w", help="After the list, print a job's row again when it changes."
        ),
    ] = False,
) -> None:
    """List TrainJobs: NAME STATUS RUNTIME NODES RESTARTS PROGRESS ETA AGE."""
    listing.list_jobs(
        names, namespace, all_namespaces, output, selector, sort_by, no_headers, watch_
    )


for alias in ("job", "trainjob", "trainjobs"):
    get_app.command(alias, hidden=True)(get_jobs)


@get_app.command("runtimes")
def get_runtimes(
    names: Annotated[list[str] | None, typer.Argument(help="Runtime names (all if none).")] = None,
    namespace: Namespace = None,
    output: OutputFormat = None,
    no_headers: NoHeaders = False,
) -> None:
    """List runtimes (built-in ClusterTrainingRuntimes, and ones stored through the SDK's
    LocalExecutor.apply_runtime): NAME KIND FRAMEWORK NODES."""
    listing.list_runtimes(names, namespace, output, no_headers)


for alias in ("runtime", "clustertrainingruntimes", "trainingruntimes"):
    get_app.command(alias, hidden=True)(get_runtimes)


@get_app.command("optimizationjobs")
def get_optimizationjobs(
    names: Annotated[
        list[str] | None, typer.Argument(help="OptimizationJob names (all if none).")
    ] = None,
    namespace: Namespace = None,
    output: OutputFormat = None,
    no_headers: NoHeaders = False,
    watch_: Annotated[
        bool,
        typer.Option("--watch", "-w", help="After the list, print a row again when it changes."),
    ] = False,
) -> None:
    """List OptimizationJobs (sweeps): NAME STATUS TRIALS BEST AGE. Their trials are TrainJobs:
    get jobs -l trainer.kubeflow.org/optimization-job=NAME."""
    from trainjob.cli import sweeps

    sweeps.list_sweeps(names, namespace, output, no_headers, watch_)


for alias in ("optimizationjob", "oj"):
    get_app.command(alias, hidden=True)(get_optimizationjobs)
