"""kubectl-style job commands on the local backend: run, get, describe, logs, suspend, resume, delete.

``trainjob run -f job.yaml [-f runtime.yaml] [--wait] [--follow]`` submits every TrainJob in the
files (runtimes in the files serve the TrainJobs of that run, looked up before the stored and
built-in ones; they are not stored);
``get jobs|runtimes``, ``describe job NAME``, ``logs NAME [--step node-1] [-f]`` and
``suspend|resume|delete NAME`` read or change jobs; ``-n NAMESPACE`` everywhere. Mutations print
``trainjob.trainer.kubeflow.org/NAME created`` lines; progress and final states go to stderr so
stdout carries only what was asked for (tables, logs).

Registered on :data:`trainjob.cli.app`; every command is a thin layer over
:class:`trainjob.local.LocalExecutor`, or with ``--backend kubernetes`` (``TRAINJOB_BACKEND``) over
:class:`trainjob.cli.cluster.ClusterJobs`, which has the same methods for a cluster. Without
``-n`` a command acts in ``default`` here and in the kubeconfig context's namespace on a cluster.
"""

from __future__ import annotations

import json
import os
import queue
import re
import sys
import threading
import time
from collections.abc import Callable, Sequence
from enum import StrEnum
from typing import Annotated, Any

import typer
from rich.console import Console

from trainjob.api import constants as c
from trainjob.api import goyaml
from trainjob.api.trainer import Runtime, TrainingRuntime, TrainJob
from trainjob.cli import HELP_STYLE, TARGET, Backend, app
from trainjob.cli import plan as planning
from trainjob.cli.cluster import ClusterJobs
from trainjob.errors import AlreadyExistsError, ErrorList, TrainJobError
from trainjob.local import JobState, LocalExecutor
from trainjob.local import state as st

RESOURCE = f"trainjob.{c.GROUP}"
out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False, soft_wrap=True)

get_app = typer.Typer(
    help="Display jobs or runtimes.", no_args_is_help=True, rich_markup_mode=HELP_STYLE
)
describe_app = typer.Typer(
    help="Show details of a job.", no_args_is_help=True, rich_markup_mode=HELP_STYLE
)
app.add_typer(get_app, name="get")
app.add_typer(describe_app, name="describe")

Namespace = Annotated[str | None, typer.Option("--namespace", "-n", help="The namespace.")]


class Output(StrEnum):
    wide = "wide"
    json = "json"
    yaml = "yaml"
    name = "name"


OutputFormat = Annotated[Output | None, typer.Option("--output", "-o", help="wide|json|yaml|name")]


Jobs = LocalExecutor | ClusterJobs
"""What the job commands act through: the local executor, or a cluster's API."""


def executor() -> Jobs:
    if TARGET.backend is Backend.kubernetes:
        return ClusterJobs(TARGET.kubeconfig, TARGET.context)
    return LocalExecutor()


def container_runner() -> str:
    """The container backend's settings for jobs run now: the engine of
    ``TRAINJOB_CONTAINER_RUNTIME`` (docker or podman), else the one that runs here."""
    from trainjob.local.containers import ContainerSettings, engine

    found = engine.detect(os.environ.get("TRAINJOB_CONTAINER_RUNTIME") or None)
    return ContainerSettings(engine=found.command).to_json()


def namespace_of(ex: Jobs, namespace: str | None) -> str:
    """``-n``, else ``default`` here or the kubeconfig context's namespace on a cluster."""
    if namespace:
        return namespace
    return ex.default_namespace if isinstance(ex, ClusterJobs) else "default"


# -- formatting ---------------------------------------------------------------------------------


def _parse_ts(ts: str | None) -> float | None:
    if not ts:
        return None
    return time.mktime(time.strptime(ts, "%Y-%m-%dT%H:%M:%SZ")) - time.timezone


def age(ts: str | None, until: float | None = None) -> str:
    """kubectl's short durations: 45s, 3m12s, 5h3m, 2d4h."""
    start = _parse_ts(ts)
    if start is None:
        return "<none>"
    secs = max(0, int((until or time.time()) - start))
    if secs < 120:
        return f"{secs}s"
    if secs < 3600:
        return f"{secs // 60}m{secs % 60}s" if secs < 600 else f"{secs // 60}m"
    if secs < 86400:
        return f"{secs // 3600}h{(secs % 3600) // 60}m" if secs < 36000 else f"{secs // 3600}h"
    return f"{secs // 86400}d{(secs % 86400) // 3600}h"


class Columns:
    """kubectl's plain columns: left-aligned, three spaces apart, no borders, never truncated."""

    def __init__(self, *headers: str, indent: str = "") -> None:
        self.rows: list[list[str]] = [list(headers)]
        self.indent = indent

    def add_row(self, *cells: str) -> None:
        self.rows.append([c.replace("\n", " ") for c in cells])

    def render(self) -> str:
        widths = [max(len(r[i]) for r in self.rows) for i in range(len(self.rows[0]))]
        lines = []
        for r in self.rows:
            cells = [cell.ljust(w) for cell, w in zip(r, widths, strict=True)]
            lines.append((self.indent + "   ".join(cells)).rstrip())
        return "\n".join(lines)

    def widths(self) -> list[int]:
        return [max(len(r[i]) for r in self.rows) for i in range(len(self.rows[0]))]

    def line(self, cells: list[str], widths: list[int]) -> str:
        """One more row in columns of at least ``widths`` (what ``kubectl get -w`` prints)."""
        padded = [c.ljust(w) for c, w in zip(cells, widths, strict=True)]
        return (self.indent + "   ".join(padded)).rstrip()


def _table(*headers: str, indent: str = "") -> Columns:
    return Columns(*headers, indent=indent)


def _echo(line: str, flush: bool = False) -> None:
    """A log line, verbatim (no markup, no emoji codes, no wrapping), to stdout."""
    sys.stdout.write(line + "\n")
    if flush:
        sys.stdout.flush()


def _print(table: Columns) -> None:
    sys.stdout.write(table.render() + "\n")


def _printed_as_objects(
    objs: Sequence[TrainJob | Runtime], output: Output | None, resource: Callable[[Any], str]
) -> bool:
    """``-o json|yaml`` (one object, or a List) and ``-o name``: print ``objs`` so, say True."""
    if output is Output.name:
        for obj in objs:
            out.print(resource(obj))
        return True
    if output not in (Output.json, Output.yaml):
        return False
    dicts = [obj.to_dict() for obj in objs]
    body = dicts[0] if len(dicts) == 1 else {"apiVersion": "v1", "kind": "List", "items": dicts}
    if output is Output.json:
        sys.stdout.write(json.dumps(body, indent=2) + "\n")
    else:
        sys.stdout.write(goyaml.dump_all([body]))
    return True


def _or_none(*values: str | None) -> list[str]:
    return [v or "<none>" for v in values]


def _field(label: str, value: object) -> None:
    """A describe line: ``Label:`` padded to the values' column, then the value."""
    sys.stdout.write(f"{label + ':':<12}{value}\n")  # verbatim: messages quote logs


def _print_section(title: str, headers: tuple[str, ...], rows: list[list[str]]) -> None:
    """A describe section as kubectl describe prints one (``Events:``): its title, then an
    indented table whose headers are underlined with dashes, or ``<none>`` beside the title."""
    if not rows:
        _field(title, "<none>")
        return
    out.print(f"{title}:")
    table = _table(*headers, indent="  ")
    table.add_row(*("-" * len(h) for h in headers))
    for row in rows:
        table.add_row(*row)
    _print(table)


def step_name(job: str, index: int, job_index: int = 0) -> str:
    """The SDK's step names: ``node-1``; an initializer's job name alone; ``job-J-I`` for replicas."""
    if job_index:
        return f"{job}-{job_index}-{index}"
    if job in (c.JOB_DATASET_INITIALIZER, c.JOB_MODEL_INITIALIZER) and index == 0:
        return job
    return f"{job}-{index}"


def parse_step(step: str, known: list[tuple[str, int, int]]) -> tuple[str, int, int]:
    """``node-1`` -> (node, 1, 0); a bare job name -> its pod 0."""
    for job, index, job_index in known:
        if step in (step_name(job, index, job_index), f"{job}-{job_index}-{index}"):
            return job, index, job_index
    m = re.fullmatch(r"(.+?)-(\d+)", step)
    if m:
        return m.group(1), int(m.group(2)), 0
    return step, 0, 0


def default_step(s: JobState) -> tuple[str, int, int]:
    """The trainer's first pod that runs here: ``node-0``, or ``launcher-0`` for MPI."""
    running = [p for p in s.pods if not p.message.startswith("not run locally")]
    for job in (c.JOB_LAUNCHER, c.JOB_NODE):
        for p in running:
            if p.job == job:
                return p.job, p.index, p.job_index
    if running:
        return running[0].job, running[0].index, running[0].job_index
    return c.JOB_NODE, 0, 0


# -- run ----------------------------------------------------------------------------------------


def load_inputs(ex: Jobs, paths: list[str], namespace: str | None) -> planning.Inputs:
    """The TrainJobs and runtimes of ``paths`` (and each TrainJob's directory: where its relative
    paths point, the file's directory as docker compose resolves a compose file's; stdin's is the
    working directory), read as ``trainjob plan`` reads them, each TrainJob checked against its
    runtime before any is submitted: every problem at once, with the lines ``plan`` prints (an
    ErrorList), so a file of two jobs, one invalid, runs neither."""
    found = planning.read_inputs(paths, namespace)
    problems = list(found.errors)
    for tj, where in planning.usable(found):
        try:
            if isinstance(ex, LocalExecutor):  # commands run in the file's directory
                ex.check(tj, found.runtimes, cwd=where)
            else:
                ex.check(tj, found.runtimes)
        except TrainJobError as e:
            problems.append(e)
    if problems:
        raise ErrorList(problems)
    return found


def progress_line(s: JobState, with_age: bool = True) -> str:
    pods = "  ".join(f"{step_name(p.job, p.index, p.job_index)} {p.phase}" for p in s.pods)
    line = f"{s.name}: {s.phase}  {pods}"
    return f"{line}  {age(s.started or s.created)}" if with_age else line


def watch(
    ex: Jobs,
    name: str,
    namespace: str,
    quiet: bool = False,
    until: Callable[[JobState], bool] = lambda s: s.finished,
) -> JobState:
    """Wait until ``until`` holds (default: the job finished); return the job's state then.

    Progress goes to stderr: a live status line on a terminal, else one line per change of the
    job's or its pods' phases (for logs and pipes); nothing when ``quiet``.
    """
    # a cluster is asked less often: three API reads a look
    pause = 1.0 if isinstance(ex, ClusterJobs) else 0.2
    if quiet:
        while not until(s := ex.state(name, namespace)):
            time.sleep(pause / 2)
        return s
    if not err.is_terminal:
        last = ""
        while True:
            s = ex.state(name, namespace)
            if until(s):
                return s
            line = progress_line(s, with_age=False)
            if line != last:
                err.print(line, markup=False, emoji=False)
                last = line
            time.sleep(pause)
    with err.status(f"{name}: waiting") as status:
        while True:
            s = ex.state(name, namespace)
            if until(s):
                return s
            status.update(progress_line(s))
            time.sleep(pause)


def _started(job: str, index: int, job_index: int) -> Callable[[JobState], bool]:
    """Whether that pod left Pending (or the job ended)."""

    def started(s: JobState) -> bool:
        pod = s.pod(job, index, job_index)
        return s.finished or pod is None or pod.phase != st.POD_PENDING

    return started


def finish(s: JobState) -> None:
    """Report a finished job on stderr; exit 1 when it failed."""
    took = ""
    start, end = _parse_ts(s.started or s.created), _parse_ts(s.completed)
    if start is not None and end is not None:
        took = f" in {age(s.started or s.created, end)}"
    if s.phase == st.FAILED:
        why = f"{s.reason}: {s.message}"
        failed = [p for p in s.pods if p.phase == st.POD_FAILED and p.exit_code is not None]
        if failed:  # what the first failed step said (its exit, the error in its log)
            p = failed[0]
            why += f"; {step_name(p.job, p.index, p.job_index)}: {p.message}"
        raise TrainJobError(f"{RESOURCE}/{s.name} Failed{took}: {why}")
    err.print(f"{RESOURCE}/{s.name} {s.phase}{took}")


@app.command("run")
def run_command(
    filename: Annotated[
        list[str],
        typer.Option("--filename", "-f", help="TrainJob (and runtime) files; - is stdin."),
    ],
    namespace: Annotated[
        str | None, typer.Option("--namespace", "-n", help="The namespace.")
    ] = None,
    wait: Annotated[
        bool, typer.Option("--wait", help="Wait until the job finishes; exit 1 if it fails.")
    ] = False,
    follow: Annotated[
        bool, typer.Option("--follow", help="Stream the trainer's logs, then wait.")
    ] = False,
    replace: Annotated[
        bool,
        typer.Option(
            "--replace",
            help="Delete a job of the same name first (like kubectl replace --force).",
        ),
    ] = False,
) -> None:
    """Run TrainJobs (on this machine, or with --backend kubernetes on the cluster)."""
    ex = executor()
    if TARGET.backend is Backend.container and isinstance(ex, LocalExecutor):
        ex.runner = container_runner()
    found = load_inputs(ex, filename, namespace)
    trainjobs, runtimes, dirs = found.trainjobs, found.runtimes, found.dirs
    submitted: list[TrainJob] = []
    for tj, where in zip(trainjobs, dirs, strict=True):
        name, ns = tj.metadata.name, namespace_of(ex, tj.metadata.namespace)
        if replace and name and ex.exists(name, ns):
            ex.delete(name, ns)
            out.print(f"{RESOURCE}/{name} deleted")
            if isinstance(ex, ClusterJobs):
                wait_gone(ex, name, ns)
        try:
            if isinstance(ex, LocalExecutor):  # commands run in the file's directory
                stored = ex.submit(tj, runtimes, cwd=where)
            else:
                stored = ex.submit(tj, runtimes)
        except AlreadyExistsError as e:
            raise AlreadyExistsError(
                f"{e}; delete it first (trainjob delete {name} -n {ns}) or run with --replace"
            ) from None
        submitted.append(stored)
        out.print(f"{RESOURCE}/{stored.metadata.name} created")
    for tj in submitted:
        name, ns = tj.metadata.name or "", namespace_of(ex, tj.metadata.namespace)
        if follow:
            # Locally the pods exist at once; a cluster's JobSet creates them (progress meanwhile),
            # or the job ends without any (a runtime it cannot find): then there is no log.
            first = watch(
                ex, name, ns, not isinstance(ex, ClusterJobs), lambda s: bool(s.pods) or s.finished
            )
            if first.pods:
                job, index, job_index = default_step(first)
                # Progress while the steps before it (initializers) run.
                watch(ex, name, ns, until=_started(job, index, job_index))
                for line in ex.logs(name, ns, job, index, follow=True, job_index=job_index):
                    _echo(line, flush=True)
            finish(watch(ex, name, ns, quiet=True))
        elif wait:
            finish(watch(ex, name, ns))


def wait_gone(ex: ClusterJobs, name: str, namespace: str, timeout: float = 60.0) -> None:
    """A deleted TrainJob stays while its finalizers run; creating it again must wait for that."""
    deadline = time.monotonic() + timeout
    while ex.exists(name, namespace):
        if time.monotonic() > deadline:
            raise TrainJobError(
                f"{RESOURCE}/{name} is still being deleted after {timeout:.0f}s; try again later"
            )
        time.sleep(0.5)


# -- get ----------------------------------------------------------------------------------------


def jobs_table(ex: Jobs, namespace: str | None, names: list[str], wide: bool) -> Columns:
    jobs = ex.list(namespace)
    states = {(s.namespace, s.name): s for s in ex.states(namespace)}
    headers = ["NAME", "STATUS", "RUNTIME", "NODES", "RESTARTS", "AGE"]
    if namespace is None:
        headers.insert(0, "NAMESPACE")
    if wide:
        headers += ["STARTED", "DURATION", "REASON"]
    table = _table(*headers)
    for tj in jobs:
        ns, name = tj.metadata.namespace or "default", tj.metadata.name or ""
        if names and name not in names:
            continue
        s = states.get((ns, name))
        phase = s.phase if s else "<unknown>"
        nodes = tj.spec.trainer.num_nodes if tj.spec.trainer and tj.spec.trainer.num_nodes else None
        row = [
            name,
            phase,
            tj.spec.runtime_ref.name,
            str(nodes or "<default>"),
            str(s.restarts if s else 0),
            age(tj.metadata.creation_timestamp),
        ]
        if namespace is None:
            row.insert(0, ns)
        if wide and s:
            end = _parse_ts(s.completed)
            row += [
                s.started or "<none>",
                age(s.started, end) if s.started else "<none>",
                s.reason or "<none>",
            ]
        table.add_row(*row)
    return table


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
    jobs = [ex.get(n, namespace) for n in names] if names else ex.list(ns)
    if _printed_as_objects(jobs, output, lambda j: f"{RESOURCE}/{j.metadata.name}"):
        return
    if not jobs and not watch_:
        where = "any namespace" if ns is None else f"{ns} namespace"
        err.print(f"No resources found in {where}.")
        return
    table = jobs_table(ex, ns, names or [], output is Output.wide)
    _print(table)
    if watch_:
        _watch_rows(ex, ns, names or [], output is Output.wide, table)


def _watch_rows(ex: Jobs, ns: str | None, names: list[str], wide: bool, first: Columns) -> None:
    """``kubectl get -w``: a job's row again whenever its status or restarts change (new
    jobs too), in the first table's columns, until Ctrl-C (which ends it quietly)."""
    widths = first.widths()
    ident = 2 if ns is None else 1  # [NAMESPACE] NAME: which job a row is

    def shown(row: list[str]) -> tuple[str, ...]:
        return (row[ident], row[ident + 3])  # STATUS and RESTARTS: a change worth a row

    last = {tuple(r[:ident]): shown(r) for r in first.rows[1:]}
    pause = 1.0 if isinstance(ex, ClusterJobs) else 0.5
    try:
        while True:
            time.sleep(pause)
            for row in jobs_table(ex, ns, names, wide).rows[1:]:
                job = tuple(row[:ident])
                if last.get(job) != shown(row):
                    last[job] = shown(row)
                    widths = [max(w, len(c)) for w, c in zip(widths, row, strict=True)]
                    _echo(first.line(row, widths), flush=True)
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
    rts = [
        r
        for r in ex.list_runtimes()
        if not isinstance(r, TrainingRuntime) or (r.metadata.namespace or "default") == namespace
    ]
    if _printed_as_objects(rts, output, lambda r: f"{r.kind.lower()}.{c.GROUP}/{r.metadata.name}"):
        return
    headers = ["NAME", "KIND", "FRAMEWORK", "NODES"]
    if output is Output.wide:
        headers.append("IMAGE")
    table = _table(*headers)
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
    _print(table)


for alias in ("runtime", "clustertrainingruntimes", "trainingruntimes"):
    get_app.command(alias, hidden=True)(get_runtimes)


# -- describe -----------------------------------------------------------------------------------


def describe_text(ex: Jobs, name: str, namespace: str) -> None:
    tj = ex.get(name, namespace)
    s = ex.state(name, namespace)
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
        _field(k, v)
    if s.message:
        _field("Message", s.message)
    status = tj.status
    _print_section(
        "Conditions",
        ("Type", "Status", "Reason", "Message", "LastTransitionTime"),
        [
            [k.type, k.status, *_or_none(k.reason, k.message, k.last_transition_time)]
            for k in (status.conditions if status else None) or ()
        ],
    )
    _print_section(
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
    _print_section(
        "Steps",
        ("Step", "Pod", "Phase", "Ready", "ExitCode", "Started", "Finished", "Message"),
        [
            [
                step_name(p.job, p.index, p.job_index),
                p.name,
                p.phase,
                str(p.ready),
                "<none>" if p.exit_code is None else str(p.exit_code),
                *_or_none(p.started, p.finished, p.message),
            ]
            for p in s.pods
        ],
    )
    if isinstance(ex, LocalExecutor):
        _field("Logs", ex.log_path(name, namespace).parent)
    _print_section(
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


# -- logs and mutations -------------------------------------------------------------------------


@app.command("logs")
def logs_command(
    name: str,
    namespace: Namespace = None,
    step: Annotated[
        str | None,
        typer.Option(
            "--step", help="The step (pod): node-0, node-1, dataset-initializer, launcher-0."
        ),
    ] = None,
    all_steps: Annotated[
        bool,
        typer.Option(
            "--all-steps",
            help="Every step's log, each line prefixed with [step] (like kubectl logs --prefix).",
        ),
    ] = False,
    follow: Annotated[
        bool, typer.Option("--follow", "-f", help="Stream new lines until the step ends.")
    ] = False,
) -> None:
    """Print the logs of one step of a TrainJob (default: the trainer's first), or of all."""
    if step and all_steps:
        raise TrainJobError("--step and --all-steps select different logs: use one of them")
    ex = executor()
    namespace = namespace_of(ex, namespace)
    s = ex.state(name, namespace)
    if all_steps:
        _all_logs(ex, s, follow)
        return
    known = [(p.job, p.index, p.job_index) for p in s.pods]
    job, index, job_index = parse_step(step, known) if step else default_step(s)
    for line in ex.logs(name, namespace, job, index, follow=follow, job_index=job_index):
        _echo(line, flush=follow)


def _all_logs(ex: Jobs, s: JobState, follow: bool) -> None:
    """Every pod's log with a ``[step]`` prefix: one after the other, or with ``follow`` as the
    lines come, each pod read by its own thread and backend (a pod still pending is waited for)."""
    pods = [p for p in s.pods if not p.message.startswith("not run locally")]
    if not follow:
        for p in pods:
            prefix = f"[{step_name(p.job, p.index, p.job_index)}] "
            for line in ex.logs(s.name, s.namespace, p.job, p.index, job_index=p.job_index):
                _echo(prefix + line)
        return
    lines: queue.Queue[str | BaseException | None] = queue.Queue()

    def read(p: st.PodState) -> None:
        prefix = f"[{step_name(p.job, p.index, p.job_index)}] "
        try:
            own = executor()  # one per thread: the local store's connection stays in its thread
            for line in own.logs(
                s.name, s.namespace, p.job, p.index, follow=True, job_index=p.job_index
            ):
                lines.put(prefix + line)
        except BaseException as e:  # handed to the main thread, which raises it
            lines.put(e)
        finally:
            lines.put(None)

    for p in pods:
        threading.Thread(target=read, args=(p,), name=f"logs-{p.name}", daemon=True).start()
    running = len(pods)
    while running:
        item = lines.get()
        if item is None:
            running -= 1
        elif isinstance(item, BaseException):
            raise item
        else:
            _echo(item, flush=True)


def _each(names: list[str], namespace: str | None, action: str, done: str) -> None:
    """Run a backend method on each job, printing ``<resource>/<name> <done>``."""
    ex = executor()
    ns = namespace_of(ex, namespace)
    for n in names:
        getattr(ex, action)(n, ns)
        out.print(f"{RESOURCE}/{n} {done}")


@app.command("suspend")
def suspend_command(names: list[str], namespace: Namespace = None) -> None:
    """Suspend TrainJobs (their processes stop; resume starts them again)."""
    _each(names, namespace, "suspend", "suspended")


@app.command("resume")
def resume_command(names: list[str], namespace: Namespace = None) -> None:
    """Resume suspended TrainJobs."""
    _each(names, namespace, "resume", "resumed")


@app.command("delete")
def delete_command(names: list[str], namespace: Namespace = None) -> None:
    """Delete TrainJobs: stop their processes, remove their logs and workspace."""
    _each(names, namespace, "delete", "deleted")
