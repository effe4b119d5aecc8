"""``trainjob run``: submit the TrainJobs of files, and wait for them or follow their logs.

``trainjob run -f job.yaml [-f runtime.yaml] [--wait] [--follow] [--replace]`` submits every
TrainJob in the files (runtimes in the files serve the TrainJobs of that run, looked up before the
stored and built-in ones; locally they are not stored, on a cluster they are applied). ``created``
lines go to stdout; progress and final states to stderr, so stdout carries only what was asked for
(the trainer's log with ``--follow``). The helpers that ``apply`` and ``delete`` share with it
(:func:`load_inputs`, :func:`kept_note`) live here too (logs and mutations: ``cli/jobs.py``).

Registered on :data:`trainjob.cli.root.app`; acts through the one executor interface
(:class:`trainjob.executor.base.Executor`) of the chosen backend (:func:`trainjob.cli.output.
executor`).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any

import typer

from trainjob.api import constants as c
from trainjob.cli.output import (
    RESOURCE,
    age,
    echo,
    err,
    executor,
    namespace_of,
    out,
)
from trainjob.cli.root import app
from trainjob.core import times
from trainjob.errors import (
    AlreadyExistsError,
    ErrorList,
    TrainJobError,
)
from trainjob.executor import model as st
from trainjob.executor import triage
from trainjob.executor.base import Executor
from trainjob.executor.model import JobState
from trainjob.executor.steps import default_step, step_name

if TYPE_CHECKING:  # the models (pydantic) load when a file is read
    from trainjob.api.trainer import TrainJob
    from trainjob.cli.inputs import Inputs

# -- run ----------------------------------------------------------------------------------------


def load_inputs(ex: Executor, paths: list[str], namespace: str | None) -> Inputs:
    """The TrainJobs and runtimes of ``paths`` (and each TrainJob's directory: where its relative
    paths point, the file's directory as docker compose resolves a compose file's; stdin's is the
    working directory), read as ``trainjob plan`` reads them, each TrainJob checked against its
    runtime before any is submitted: every problem at once, with the lines ``plan`` prints (an
    ErrorList), so a file of two jobs, one invalid, runs neither."""
    from trainjob.cli import inputs

    found = inputs.read_inputs(paths, namespace)
    problems = list(found.errors)
    for tj, where in inputs.usable(found):
        try:
            ex.check(tj, found.runtimes, cwd=where)  # a local job's commands run there
        except TrainJobError as e:
            problems.append(e)
    if problems:
        raise ErrorList(problems)
    return found


def progress_line(s: JobState, with_age: bool = True) -> str:
    pods = "  ".join(f"{step_name(*p.step)} {p.phase}" for p in s.pods)
    line = f"{s.name}: {s.phase}  {pods}"
    return f"{line}  {age(s.started or s.created)}" if with_age else line


def watch(
    ex: Executor,
    name: str,
    namespace: str,
    quiet: bool = False,
    until: Callable[[JobState], bool] = lambda s: s.finished,
) -> JobState:
    """Wait until ``until`` holds (default: the job finished); return the job's state then.

    Progress goes to stderr: a live status line on a terminal, else one line per change of the
    job's or its pods' phases (for logs and pipes); nothing when ``quiet``.
    """
    if quiet:
        return ex.wait(name, namespace, frozenset(), until=until, poll=ex.poll_interval / 2)
    stall = Stall(ex, namespace)
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
            stall.check(s)
            time.sleep(ex.poll_interval)
    with err.status(f"{name}: waiting") as status:
        while True:
            s = ex.state(name, namespace)
            if until(s):
                return s
            status.update(progress_line(s))
            stall.check(s, status.console)
            time.sleep(ex.poll_interval)


class Stall:
    """Says, once, why a job on a cluster has not moved: no controller acted on it (no status
    after :attr:`AFTER` seconds: nothing runs trainjob's or upstream's controller), or its JobSet
    made no pods (nothing runs the JobSet controller), with the commands that check."""

    AFTER = 30.0

    def __init__(self, ex: Executor, namespace: str) -> None:
        self.ex, self.namespace = ex, namespace
        self.since = time.monotonic()
        self.said = False

    def check(self, s: JobState, console: Any = None) -> None:
        if self.said or s.pods or s.finished or s.phase == st.SUSPENDED:
            return
        if time.monotonic() - self.since < self.AFTER or self.ex.backend != "kubernetes":
            return
        self.said = True
        waited = f"{self.AFTER:.0f}s"
        status = s.trainjob.get("status") or {}
        if not status:
            msg = (
                f"no controller has acted on TrainJob {s.namespace}/{s.name} in {waited} (it has "
                "no status): is trainjob's or Kubeflow Trainer's controller installed and "
                "running? Check: kubectl get pods -n trainjob-system (or kubeflow-system); "
                "install it: docs/controller-install.md. Still waiting; Ctrl-C stops watching."
            )
        else:
            msg = (
                f"TrainJob {s.namespace}/{s.name} has no pods after {waited}: its JobSet was "
                "made, but nothing created its pods: is the JobSet controller installed? Check: "
                f"kubectl get jobsets -n {s.namespace}; kubectl get pods -n jobset-system. "
                "Still waiting; Ctrl-C stops watching."
            )
        (console or err).print(f"warning: {msg}", markup=False, highlight=False)


def _started(job: str, index: int, job_index: int) -> Callable[[JobState], bool]:
    """Whether that pod left Pending (or the job ended)."""

    def started(s: JobState) -> bool:
        pod = s.pod(job, index, job_index)
        return s.finished or pod is None or pod.phase != st.POD_PENDING

    return started


def finish(s: JobState, ex: Executor | None = None) -> None:
    """Report a finished job on stderr; exit 1 when it failed, saying which step and rank failed
    first, how, and (with ``ex``) its last log lines."""
    took = ""
    start, end = times.parse(s.started or s.created), times.parse(s.completed)
    if start is not None and end is not None:
        took = f" in {age(s.started or s.created, end)}"
    if s.phase == st.FAILED:
        why = f"{s.reason}: {s.message}"
        failure = ex.failure(s.name, s.namespace, s) if ex is not None else triage.failure(s)
        if failure is not None:
            said = triage.says_first_failed(s.message)
            why += ("" if said else f"; {failure.summary()}") + (
                f"\n{failure.tail_text()}" if failure.tail else ""
            )
        raise TrainJobError(f"{RESOURCE}/{s.name} Failed{took}: {why}")
    err.print(f"{RESOURCE}/{s.name} {s.phase}{took}")


@app.command("run")
def run_command(
    filename: Annotated[
        list[str],
        typer.Option(
            "--filename", "-f", help="TrainJob, OptimizationJob (and runtime) files; - is stdin."
        ),
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
    workdir: Annotated[
        str | None,
        typer.Option(
            "--workdir",
            metavar="DIR",
            help="Ship this folder with the job: packed now (its .gitignore respected), "
            "read-only on every trainer node, on PYTHONPATH and the working directory.",
        ),
    ] = None,
    workdir_exclude: Annotated[
        list[str] | None,
        typer.Option(
            "--workdir-exclude",
            metavar="PATTERN",
            help="Leave paths out of --workdir (.gitignore syntax). Repeatable.",
        ),
    ] = None,
    workdir_uri: Annotated[
        str | None,
        typer.Option(
            "--workdir-uri",
            metavar="URI",
            help="Store the --workdir archive under this s3://bucket/prefix (on a cluster: "
            "for a folder too large for a ConfigMap).",
        ),
    ] = None,
) -> None:
    """Run TrainJobs and OptimizationJobs (on this machine, or with --backend kubernetes on the
    cluster)."""
    ex = executor()
    found = load_inputs(ex, filename, namespace)
    trainjobs, runtimes, dirs = found.trainjobs, found.runtimes, found.dirs
    snapshot = None
    if workdir is not None:
        from trainjob.cli import workdir as workdirs

        snapshot = workdirs.pack(
            workdir, workdir_exclude or (), workdir_uri, trainjobs, found.optimizationjobs
        )
    elif workdir_exclude or workdir_uri:
        raise TrainJobError("--workdir-exclude and --workdir-uri go with --workdir DIR")
    submitted: list[TrainJob] = []
    for tj, where in zip(trainjobs, dirs, strict=True):
        name, ns = tj.metadata.name, namespace_of(ex, tj.metadata.namespace)
        if replace and name and ex.exists(name, ns):
            note = kept_note(ex, name, ns)
            ex.delete(name, ns)
            out.print(f"{RESOURCE}/{name} deleted")
            if note:
                err.print(note, markup=False)
            try:
                ex.wait_gone(name, ns)
            except TimeoutError as e:
                raise TrainJobError(f"{e}; try again later") from None
        try:
            # a local job's commands run in ``where`` (in its workspace's copy with --workdir)
            stored = ex.submit(tj, runtimes, cwd=where, workspace=snapshot)
        except AlreadyExistsError as e:
            raise AlreadyExistsError(
                f"{e}; delete it first (trainjob delete {name} -n {ns}) or run with --replace"
            ) from None
        submitted.append(stored)
        out.print(f"{RESOURCE}/{stored.metadata.name} created")
    if found.optimizationjobs:  # sweeps: cli/sweeps.py (their trials are TrainJobs)
        from trainjob.cli import sweeps

        sweeps.run_sweeps(found.optimizationjobs, found.sweep_dirs, wait or follow, snapshot)
    for tj in submitted:
        name, ns = tj.metadata.name or "", namespace_of(ex, tj.metadata.namespace)
        try:
            if follow:
                _follow_run(ex, name, ns)
            elif wait:
                finish(watch(ex, name, ns), ex)
        except KeyboardInterrupt:
            err.print(
                f"{RESOURCE}/{name} goes on running (Ctrl-C only stopped watching it): "
                f"follow it again with 'trainjob logs {name} -n {ns} -f', stop it with "
                f"'trainjob delete {name} -n {ns}'",
                markup=False,
                highlight=False,
            )
            raise


INITIALIZERS = (c.JOB_DATASET_INITIALIZER, c.JOB_MODEL_INITIALIZER)


def _follow_run(ex: Executor, name: str, ns: str) -> None:
    """``run --follow``: progress until the pods exist; the initializers' own lines (their files,
    bytes and time left) on stderr, prefixed ``[model-initializer]``, as they come; then the
    trainer's log on stdout; then the verdict."""
    # Locally the pods exist at once; a cluster's JobSet creates them (progress meanwhile), or
    # the job ends without any (a runtime it cannot find): then there is no log.
    first = watch(ex, name, ns, until=lambda s: bool(s.pods) or s.finished)
    if first.pods:
        inits = tuple(p for p in first.pods if p.job in INITIALIZERS and p.runs)
        if inits:
            for pod, line in ex.all_logs(first.replace(pods=inits), True, opener=executor):
                err.print(f"[{step_name(*pod.step)}] {line}", markup=False, highlight=False)
        job, index, job_index = default_step(first)
        # Progress while the steps before it run (when they had no log of their own to show).
        watch(ex, name, ns, until=_started(job, index, job_index))
        for line in ex.logs(name, ns, job, index, follow=True, job_index=job_index):
            echo(line, flush=True)
    finish(watch(ex, name, ns, quiet=True), ex)


def kept_note(ex: Executor, name: str, namespace: str) -> str:
    """``outputs kept in PATH (trainjob delete --purge removes them)`` for a job with outputs,
    else ``""``; said on stderr when a job is deleted, so nobody wonders where they went."""
    kept = ex.outputs(name, namespace)
    if not kept:
        return ""
    volumes = [o.location for o in kept if o.name != "output_dir"] or [kept[0].location]
    # local volumes are folders of the run's folder (outputs/NS/NAME/RUN/VOLUME): name that one
    runs = {os.path.dirname(v.rstrip("/")) for v in volumes if os.path.isabs(v)}
    one_run = len(runs) == 1 and all(os.path.isabs(v) for v in volumes)
    where = runs.pop() if one_run else ", ".join(volumes)
    return f"{RESOURCE}/{name}: outputs kept in {where} (delete --purge removes them)"
