"""``trainjob get jobs|runtimes``: what kubectl get prints (``describe``: ``cli/describe.py``).

``get jobs [NAME...] [-A] [-o wide|json|yaml|name] [-w]``: NAME STATUS RUNTIME NODES RESTARTS
PROGRESS ETA AGE (NAMESPACE first with ``-A``; STARTED DURATION REASON LOSS with ``-o wide``;
PROGRESS, ETA and LOSS are what the training last reported, ``status.trainerStatus``, the ETA
counted down since), from one listing of the
backend (:meth:`trainjob.executor.base.Executor.states`); ``-w`` prints a job's row again each
time its status, phase condition, restarts or progress report change (:meth:`~trainjob.executor.base.Executor.watch_states`).
``get runtimes``: NAME KIND FRAMEWORK NODES (IMAGE with ``-o wide``).

Registered on :data:`trainjob.cli.app`; acts through the executor of :func:`trainjob.cli.output.
executor` only, so every backend prints the same.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer
from typer.core import TyperGroup

from trainjob.api import constants as c
from trainjob.api import phases as tphases
from trainjob.cli import HELP_STYLE, app
from trainjob.cli.output import (
    RESOURCE,
    Columns,
    Namespace,
    OutputFormat,
    age,
    duration,
    echo,
    executor,
    namespace_of,
    note,
    output_format,
    print_table,
    printed_as_objects,
)
from trainjob.core import times
from trainjob.errors import NotFoundError, TrainJobError

if TYPE_CHECKING:  # the API models (pydantic) and the executors load when a command uses them
    from trainjob.api.trainer import Runtime
    from trainjob.executor.base import Executor
    from trainjob.executor.model import JobState

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
    help="Display jobs or runtimes (also as kubectl: get trainjob/NAME).",
    no_args_is_help=True,
    rich_markup_mode=HELP_STYLE,
    cls=TypeSlashName,
)
app.add_typer(get_app, name="get")


def job_headers(all_namespaces: bool, wide: bool) -> list[str]:
    headers = ["NAME", "STATUS", "RUNTIME", "NODES", "RESTARTS", "PROGRESS", "ETA", "AGE"]
    if all_namespaces:
        headers.insert(0, "NAMESPACE")
    if wide:
        headers += ["STARTED", "DURATION", "REASON", "LOSS"]
    return headers


def progress_cells(s: JobState) -> tuple[str, str, str]:
    """PROGRESS, ETA and LOSS of a job: ``<none>`` before any report; no ETA once finished."""
    p = s.progress
    if p is None:
        return "<none>", "<none>", "<none>"
    eta = p.remaining()
    return (
        "<none>" if p.progress_percentage is None else f"{p.progress_percentage}%",
        "<none>" if eta is None or s.finished else duration(eta),
        short_number(p.loss) if p.loss is not None else "<none>",
    )


def short_number(value: str) -> str:
    """A reported value as a person reads it: ``0.6931`` for ``0.69314718056``."""
    try:
        number = float(value)
    except ValueError:
        return value
    return value if number.is_integer() and "." not in value else f"{number:.4g}"


def status_cell(s: JobState) -> tuple[str, str]:
    """STATUS and REASON of a job: its phase, or for a live one what its phase condition says it
    is doing where that says more (Initializing, Restarting; :mod:`trainjob.api.phases`), with
    the condition's reason."""
    if s.finished:
        return s.phase, s.reason
    now = tphases.current((s.trainjob.get("status") or {}).get("conditions"))
    if now is None:
        return s.phase, s.reason
    shown = (
        now.type
        if now.type in (tphases.CONDITION_INITIALIZING, tphases.CONDITION_RESTARTING)
        else s.phase
    )
    return shown, s.reason or now.reason


def job_row(s: JobState, all_namespaces: bool, wide: bool) -> list[str]:
    progress, eta, loss = progress_cells(s)
    status, reason = status_cell(s)
    row = [
        s.name,
        status,
        s.runtime_name,
        str(s.num_nodes or "<default>"),
        str(s.restarts),
        progress,
        eta,
        age(s.created),
    ]
    if all_namespaces:
        row.insert(0, s.namespace)
    if wide:
        end = times.parse(s.completed)
        row += [
            s.started or "<none>",
            age(s.started, end) if s.started else "<none>",
            reason or "<none>",
            loss,
        ]
    return row


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


def select(states: list[JobState], selector: str | None, sort_by: str | None) -> list[JobState]:
    """``-l`` and ``--sort-by`` over the jobs' TrainJob objects, as kubectl applies them."""
    if selector:
        from trainjob.core import selectors

        try:
            matches = selectors.matcher(selector)
        except ValueError as e:
            raise TrainJobError(str(e)) from None
        states = [
            s for s in states if matches(((s.trainjob.get("metadata") or {}).get("labels")) or {})
        ]
    if sort_by:
        from trainjob.core import jsonpath

        try:
            key = jsonpath.sort_key(sort_by)
        except ValueError as e:
            raise TrainJobError(f"couldn't find any field with path {sort_by!r}: {e}") from None
        states = sorted(states, key=lambda s: key(dict(s.trainjob)))
    return states


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
    fmt = output_format(output)
    ex = executor()
    namespace = namespace_of(ex, namespace)
    ns = None if all_namespaces else namespace
    states = [ex.state(n, namespace) for n in names] if names else ex.states(ns, pods=False)
    states = select(states, selector, sort_by)
    if fmt.objects:
        jobs = [ex.get(s.name, s.namespace) for s in states]
        single = len(names or ()) == 1
        printed_as_objects(jobs, fmt, lambda j: f"{RESOURCE}/{j.metadata.name}", single=single)
        return
    if not states and not watch_:
        where = "any namespace" if ns is None else f"{ns} namespace"
        note(f"No resources found in {where}.")
        return
    table = Columns(*job_headers(ns is None, fmt.wide))
    for s in states:
        table.add_row(*job_row(s, ns is None, fmt.wide))
    print_table(table, headers=not no_headers)
    if watch_:
        _watch_rows(ex, ns, set(names or ()), fmt.wide, table)


def _watch_rows(ex: Executor, ns: str | None, names: set[str], wide: bool, first: Columns) -> None:
    """``kubectl get -w``: a job's row again whenever its status or restarts change (new jobs
    too), in the first table's columns, until Ctrl-C (which ends it quietly)."""
    widths = first.widths()
    updates = ex.watch_states(ns)
    try:
        next(updates)  # the state the table shows
        for changed in updates:
            for s in changed:
                if names and s.name not in names:
                    continue
                row = job_row(s, ns is None, wide)
                widths = [max(w, len(cell)) for w, cell in zip(widths, row, strict=True)]
                echo(first.line(row, widths), flush=True)
    except KeyboardInterrupt:
        return


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
    fmt = output_format(output)
    ex = executor()
    namespace = namespace_of(ex, namespace)
    rts = ex.list_runtimes(namespace)
    if names:
        by_name = {r.metadata.name: r for r in rts}
        missing = [n for n in names if n not in by_name]
        if missing:
            raise NotFoundError(
                f'clustertrainingruntimes.{c.GROUP} "{missing[0]}" not found '
                f"(runtimes: {', '.join(sorted(n for n in by_name if n))})"
            )
        rts = [by_name[n] for n in names]
    if printed_as_objects(
        rts,
        fmt,
        lambda r: f"{r.kind.lower()}.{c.GROUP}/{r.metadata.name}",
        single=len(names or ()) == 1,
    ):
        return
    headers = ["NAME", "KIND", "FRAMEWORK", "NODES"]
    if fmt.wide:
        headers.append("IMAGE")
    table = Columns(*headers)
    for r in rts:
        labels = r.metadata.labels or {}
        policy = r.spec.ml_policy
        row = [
            r.metadata.name or "",
            r.kind,
            labels.get(c.LABEL_FRAMEWORK, "<none>"),
            str(policy.num_nodes if policy and policy.num_nodes else 1),
        ]
        if fmt.wide:
            row.append(",".join(_images(r)) or "<none>")
        table.add_row(*row)
    print_table(table, headers=not no_headers)


def _images(r: Runtime) -> list[str]:
    images: list[str] = []
    for rj in r.spec.template.spec.replicated_jobs or ():
        for ctr in rj.template.spec.template.spec.containers:
            if ctr.image and ctr.image not in images:
                images.append(ctr.image)
    return images


for alias in ("runtime", "clustertrainingruntimes", "trainingruntimes"):
    get_app.command(alias, hidden=True)(get_runtimes)
