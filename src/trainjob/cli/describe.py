"""``trainjob describe job|runtime``: what kubectl describe prints (``get``: ``cli/get.py``).

``describe job NAME``: status, progress (every metric last reported), conditions, jobs, steps
(pods), where the logs are, and events. ``describe runtime NAME``: its ML policy, nodes, jobs,
containers, images and commands.

Registered on :data:`trainjob.cli.root.app`; acts through the executor of :func:`trainjob.cli.output.
executor` only, so every backend prints the same.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer

from trainjob.api import constants as c
from trainjob.cli import HELP_STYLE
from trainjob.cli.get import TypeSlashName
from trainjob.cli.listing import progress_cells
from trainjob.cli.options import Namespace
from trainjob.cli.output import (
    age,
    executor,
    field,
    namespace_of,
    or_none,
    print_section,
)
from trainjob.cli.root import app
from trainjob.errors import NotFoundError, TrainJobError
from trainjob.executor import phases
from trainjob.executor.base import Executor
from trainjob.executor.model import FAILED, JobState
from trainjob.executor.steps import step_name

if TYPE_CHECKING:  # the models (pydantic) load when a job or a runtime is described
    from trainjob.api.trainer import Runtime, TrainJob

describe_app = typer.Typer(
    help="Show details of a job, a runtime or an OptimizationJob.",
    no_args_is_help=True,
    rich_markup_mode=HELP_STYLE,
    cls=TypeSlashName,
)
app.add_typer(describe_app, name="describe")


def _trainjob(s: JobState) -> TrainJob:
    from trainjob.api.load import parse
    from trainjob.api.trainer import TrainJob

    tj = parse(dict(s.trainjob))
    if not isinstance(tj, TrainJob):  # pragma: no cover - executors hold TrainJobs
        raise TrainJobError(f"expected a TrainJob, got {s.trainjob.get('kind')}")
    return tj


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
        # a Failed job has no status.completionTime (as a Job's): when it failed is its own line
        ("Failed" if s.phase == FAILED else "Completed", s.completed or "<none>"),
        ("Restarts", str(s.restarts)),
    ]
    from trainjob.workspace import names as workspace

    annotations = tj.metadata.annotations or {}
    if annotations.get(workspace.DIGEST):  # which code it runs: the snapshot packed at submit
        where = annotations.get(workspace.SOURCE)
        lines.append(
            ("Workspace", annotations[workspace.DIGEST] + (f" ({where})" if where else ""))
        )
    if not s.finished:  # what it is doing now: Queued, Initializing, Running, Restarting
        doing, why = phases.activity(s)
        lines.insert(4, ("Phase", f"{doing} ({why})" if why else doing))
    for k, v in lines:
        field(k, v)
    if s.message:
        field("Message", s.message)
    failure = ex.failure(name, namespace, s)
    if failure is not None:  # which step and rank failed first, how, its last log lines
        field("Failure", failure.summary())
        if failure.tail:
            field("", failure.tail_text().replace("\n", "\n" + " " * 12))
    describe_progress(s)
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
    kept = ex.outputs(name, namespace)
    for i, o in enumerate(kept):  # kept after delete: describe says where
        field("Output" if i == 0 else "", f"{o.location}  ({o.description})")
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


def describe_progress(s: JobState) -> None:
    """``Progress:`` what the training last reported: percentage, ETA, when, every metric."""
    p = s.progress
    if p is None:
        field("Progress", "<none>")
        return
    progress, eta, _ = progress_cells(s)
    line = progress
    if eta != "<none>":
        line += f", ETA {eta}"
    print_section(
        f"Progress ({line}, reported {age(p.time)} ago)",
        ("Metric", "Value"),
        [[k, v] for k, v in p.metrics.items()],
    )


@describe_app.command("job")
def describe_job(name: str, namespace: Namespace = None) -> None:
    """Show a TrainJob: status, conditions, jobs, steps (pods) and events."""
    ex = executor()
    describe_text(ex, name, namespace_of(ex, namespace))


for alias in ("jobs", "trainjob", "trainjobs"):
    describe_app.command(alias, hidden=True)(describe_job)


def describe_runtime_text(r: Runtime) -> None:
    meta, spec = r.metadata, r.spec
    labels = meta.labels or {}
    field("Name", meta.name)
    if meta.namespace:
        field("Namespace", meta.namespace)
    field("Kind", r.kind)
    field("Framework", labels.get(c.LABEL_FRAMEWORK, "<none>"))
    field("Labels", ",".join(f"{k}={v}" for k, v in sorted(labels.items())) or "<none>")
    policy = spec.ml_policy
    kinds = []
    if policy is not None:
        for name in ("torch", "mpi", "jax", "xgboost"):
            if getattr(policy, name, None) is not None:
                kinds.append(name)
    field("Nodes", str(policy.num_nodes if policy and policy.num_nodes else 1))
    field("MLPolicy", ", ".join(kinds) or "<none>")
    pg = spec.pod_group_policy
    field(
        "PodGroup",
        "<none>"
        if pg is None
        else ", ".join(n for n in ("coscheduling", "volcano") if getattr(pg, n, None) is not None)
        or "<none>",
    )
    rows = []
    for rj in spec.template.spec.replicated_jobs or ():
        deps = ",".join(f"{d.name}:{d.status}" for d in (rj.depends_on or ())) or "<none>"
        for ctr in rj.template.spec.template.spec.containers:
            command = " ".join([*(ctr.command or ()), *(ctr.args or ())])
            rows.append(
                [rj.name, str(rj.replicas or 1), ctr.name, ctr.image or "<none>", deps,
                 command or "<none>"]
            )  # fmt: skip
    print_section("Jobs", ("Job", "Replicas", "Container", "Image", "DependsOn", "Command"), rows)


@describe_app.command("runtime")
def describe_runtime(name: str, namespace: Namespace = None) -> None:
    """Show a runtime: its ML policy, nodes, jobs, containers, images and commands."""
    ex = executor()
    ns = namespace_of(ex, namespace)
    for kind in (c.TRAINING_RUNTIME_KIND, c.CLUSTER_TRAINING_RUNTIME_KIND):
        try:
            r = ex.get_runtime(name, kind, ns if kind == c.TRAINING_RUNTIME_KIND else None)
        except NotFoundError:
            continue
        describe_runtime_text(r)
        return
    known = ", ".join(sorted(r.metadata.name or "" for r in ex.list_runtimes(ns)))
    raise NotFoundError(f'clustertrainingruntimes.{c.GROUP} "{name}" not found (runtimes: {known})')


for alias in ("runtimes", "clustertrainingruntime", "clustertrainingruntimes", "trainingruntime",
              "trainingruntimes"):  # fmt: skip
    describe_app.command(alias, hidden=True)(describe_runtime)


@describe_app.command("optimizationjob")
def describe_optimizationjob(name: str, namespace: Namespace = None) -> None:
    """Show an OptimizationJob: its objective, algorithm, best trial, every trial (parameters,
    objective, phase, why it stopped) and events."""
    from trainjob.cli import sweeps

    sweeps.describe_sweep(name, namespace)


for alias in ("optimizationjobs", "oj"):
    describe_app.command(alias, hidden=True)(describe_optimizationjob)
