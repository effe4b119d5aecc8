"""``trainjob get jobs|runtimes`` and ``trainjob describe job``: what kubectl get/describe print.

``get jobs [NAME...] [-A] [-o wide|json|yaml|name] [-w]``: NAME STATUS RUNTIME NODES RESTARTS AGE
(NAMESPACE first with ``-A``; STARTED DURATION REASON with ``-o wide``), from one listing of the
backend (:meth:`trainjob.executor.base.Executor.states`); ``-w`` prints a job's row again each
time its status or restarts change (:meth:`~trainjob.executor.base.Executor.watch_states`).
``get runtimes``: NAME KIND FRAMEWORK NODES (IMAGE with ``-o wide``). ``describe job NAME``:
status, conditions, jobs, steps (pods), where the logs are, and events.

Registered on :data:`trainjob.cli.app`; acts through the executor of :func:`trainjob.cli.output.
executor` only, so every backend prints the same.
"""

from __future__ import annotations

from typing import Annotated

import typer

from trainjob.api import constants as c
from trainjob.api.load import parse
from trainjob.api.trainer import TrainJob
from trainjob.cli import HELP_STYLE, app
from trainjob.cli.output import (
    RESOURCE,
    Columns,
    Namespace,
    Output,
    OutputFormat,
    age,
    echo,
    err,
    executor,
    field,
    namespace_of,
    or_none,
    print_section,
    print_table,
    printed_as_objects,
)
from trainjob.core import times
from trainjob.errors import TrainJobError
from trainjob.executor.base import Executor
from trainjob.executor.model import JobState
from trainjob.executor.steps import step_name

get_app = typer.Typer(
    help="Display jobs or runtimes.", no_args_is_help=True, rich_markup_mode=HELP_STYLE
)
describe_app = typer.Typer(
    help="Show details of a job.", no_args_is_help=True, rich_markup_mode=HELP_STYLE
)
app.add_typer(get_app, name="get")
app.add_typer(describe_app, name="describe")


def _trainjob(s: JobState) -> TrainJob:
    tj = parse(dict(s.trainjob))
    if not isinstance(tj, TrainJob):  # pragma: no cover - executors hold TrainJobs
        raise TrainJobError(f"expected a TrainJob, got {s.trainjob.get('kind')}")
    return tj


def job_headers(all_namespaces: bool, wide: bool) -> list[str]:
    headers = ["NAME", "STATUS", "RUNTIME", "NODES", "RESTARTS", "AGE"]
    if all_namespaces:
        headers.insert(0, "NAMESPACE")
    if wide:
        headers += ["STARTED", "DURATION", "REASON"]
    return headers


def job_row(s: JobState, all_namespaces: bool, wide: bool) -> list[str]:
    row = [
        s.name,
        s.phase,
        s.runtime_name,
        str(s.num_nodes or "<default>"),
        str(s.restarts),
        age(s.created),
    ]
    if all_namespaces:
        row.insert(0, s.namespace)
    if wide:
        end = times.parse(s.completed)
        row += [
            s.started or "<none>",
            age(s.started, end) if s.started else "<none>",
            s.reason or "<none>",
        ]
    return row


@get_app.command("jobs")
def get_jobs(
    names: Annotated[list[str] | None, typer.Argument(help="Job names (all if none).")] = None,
    namespace: Namespace = None,
    all_namespaces: Annotated[
        bool, typer.Option("--all-namespaces", "-A", help="Jobs of every namespace.")
    ] = False,
    output: OutputFormat = None,
    watch_: Annotated[
        bool,
        typer.Option(
            "--watch", "-w", help="After the list, print a job's row again when it changes."
        ),
    ] = False,
) -> None:
    """List TrainJobs: NAME STATUS RUNTIME NODES RESTARTS AGE."""
    ex = executor()
    namespace = namespace_of(ex, namespace)
    ns = None if all_namespaces else namespace
    if output in (Output.json, Output.yaml, Output.name):
        jobs = (
            [ex.get(n, namespace) for n in names]
            if names
            else [ex.get(s.name, s.namespace) for s in ex.states(ns, pods=False)]
        )
        printed_as_objects(jobs, output, lambda j: f"{RESOURCE}/{j.metadata.name}")
        return
    states = [ex.state(n, namespace) for n in names] if names else ex.states(ns, pods=False)
    if not states and not watch_:
        where = "any namespace" if ns is None else f"{ns} namespace"
        err.print(f"No resources found in {where}.")
        return
    wide = output is Output.wide
    table = Columns(*job_headers(ns is None, wide))
    for s in states:
        table.add_row(*job_row(s, ns is None, wide))
    print_table(table)
    if watch_:
        _watch_rows(ex, ns, set(names or ()), wide, table)


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
    namespace: Namespace = None,
    output: OutputFormat = None,
) -> None:
    """List runtimes (built-in ClusterTrainingRuntimes, and ones stored through the SDK's
    LocalExecutor.apply_runtime): NAME KIND FRAMEWORK NODES."""
    ex = executor()
    namespace = namespace_of(ex, namespace)
    rts = ex.list_runtimes(namespace)
    if printed_as_objects(rts, output, lambda r: f"{r.kind.lower()}.{c.GROUP}/{r.metadata.name}"):
        return
    headers = ["NAME", "KIND", "FRAMEWORK", "NODES"]
    if output is Output.wide:
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
        if output is Output.wide:
            images = []
            for rj in r.spec.template.spec.replicated_jobs or ():
                for ctr in rj.template.spec.template.spec.containers:
                    if ctr.image and ctr.image not in images:
                        images.append(ctr.image)
            row.append(",".join(images) or "<none>")
        table.add_row(*row)
    print_table(table)


for alias in ("runtime", "clustertrainingruntimes", "trainingruntimes"):
    get_app.command(alias, hidden=True)(get_runtimes)


def describe_text(ex: Executor, name: str, namespace: str) -> None:
    s = ex.state(name, namespace)
    tj = _trainjob(s)
    ref = tj.spec.runtime_ref
    lines = [
        ("Name", name),
        ("Namespace", namespace),
        ("Runtime", f"{ref.kind or c.CLUSTER_TRAINING_RUNTIME_KIND}/{ref.name}"),
        ("Status", s.phase + (f" ({s.reason})" if s.reason else "")),
        ("Created", s.created),
        ("Started", s.started or "<none>"),
        ("Completed", s.completed or "<none>"),
        ("Restarts", str(s.restarts)),
    ]
    for k, v in lines:
        field(k, v)
    if s.message:
        field("Message", s.message)
    status = tj.status
    print_section(
        "Conditions",
        ("Type", "Status", "Reason", "Message", "LastTransitionTime"),
        [
            [k.type, k.status, *or_none(k.reason, k.message, k.last_transition_time)]
            for k in (status.conditions if status else None) or ()
        ],
    )
    print_section(
        "Jobs",
        ("Name", "Ready", "Succeeded", "Failed", "Active", "Suspended"),
        [
            [
                j.name,
                *(str(v or 0) for v in (j.ready, j.succeeded, j.failed, j.active, j.suspended)),
            ]
            for j in (status.jobs_status if status else None) or ()
        ],
    )
    print_section(
        "Steps",
        ("Step", "Pod", "Phase", "Ready", "ExitCode", "Started", "Finished", "Message"),
        [
            [
                step_name(*p.step),
                p.name,
                p.phase,
                str(p.ready),
                "<none>" if p.exit_code is None else str(p.exit_code),
                *or_none(p.started, p.finished, p.message),
            ]
            for p in s.pods
        ],
    )
    logs = ex.log_location(name, namespace)
    if logs:
        field("Logs", logs)
    print_section(
        "Events",
        ("Type", "Reason", "Age", "From", "Message"),
        [
            [
                e.type,
                e.reason,
                age(e.timestamp),
                f"{e.involved_kind.lower()}/{e.involved_name}",
                e.message,
            ]
            for e in ex.events(name, namespace)
        ],
    )


@describe_app.command("job")
def describe_job(name: str, namespace: Namespace = None) -> None:
    """Show a TrainJob: status, conditions, jobs, steps (pods) and events."""
    ex = executor()
    describe_text(ex, name, namespace_of(ex, namespace))


for alias in ("jobs", "trainjob", "trainjobs"):
    describe_app.command(alias, hidden=True)(describe_job)
