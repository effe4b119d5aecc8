"""kubectl-style job commands: run, logs, suspend, resume, delete (get/describe: ``cli/get.py``).

``trainjob run -f job.yaml [-f runtime.yaml] [--wait] [--follow] [--replace]`` submits every
TrainJob in the files (runtimes in the files serve the TrainJobs of that run, looked up before the
stored and built-in ones; locally they are not stored, on a cluster they are applied);
``logs NAME [--step node-1] [--all-steps] [-f]`` and ``suspend|resume|delete NAME`` read or change
jobs; ``-n NAMESPACE`` everywhere. Mutations print ``trainjob.trainer.kubeflow.org/NAME created``
lines; progress and final states go to stderr so stdout carries only what was asked for (logs).

Registered on :data:`trainjob.cli.app`; every command acts through the one executor interface
(:class:`trainjob.executor.base.Executor`) of the chosen backend (:func:`trainjob.cli.output.
executor`): the local executor, or with ``--backend kubernetes`` (``TRAINJOB_BACKEND``) a
cluster's. Without ``-n`` a command acts in ``default`` here and in the kubeconfig context's
namespace on a cluster.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Annotated

import typer

from trainjob.api.trainer import TrainJob
from trainjob.cli import app
from trainjob.cli import plan as planning
from trainjob.cli.output import (
    RESOURCE,
    Namespace,
    age,
    echo,
    err,
    executor,
    namespace_of,
    out,
)
from trainjob.core import times
from trainjob.errors import AlreadyExistsError, ErrorList, TrainJobError
from trainjob.executor import model as st
from trainjob.executor.base import Executor
from trainjob.executor.model import JobState
from trainjob.executor.steps import default_step, parse_step, step_name

# -- run ----------------------------------------------------------------------------------------


def load_inputs(ex: Executor, paths: list[str], namespace: str | None) -> planning.Inputs:
    """The TrainJobs and runtimes of ``paths`` (and each TrainJob's directory: where its relative
    paths point, the file's directory as docker compose resolves a compose file's; stdin's is the
    working directory), read as ``trainjob plan`` reads them, each TrainJob checked against its
    runtime before any is submitted: every problem at once, with the lines ``plan`` prints (an
    ErrorList), so a file of two jobs, one invalid, runs neither."""
    found = planning.read_inputs(paths, namespace)
    problems = list(found.errors)
    for tj, where in planning.usable(found):
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
            time.sleep(ex.poll_interval)
    with err.status(f"{name}: waiting") as status:
        while True:
            s = ex.state(name, namespace)
            if until(s):
                return s
            status.update(progress_line(s))
            time.sleep(ex.poll_interval)


def _started(job: str, index: int, job_index: int) -> Callable[[JobState], bool]:
    """Whether that pod left Pending (or the job ended)."""

    def started(s: JobState) -> bool:
        pod = s.pod(job, index, job_index)
        return s.finished or pod is None or pod.phase != st.POD_PENDING

    return started


def finish(s: JobState) -> None:
    """Report a finished job on stderr; exit 1 when it failed."""
    took = ""
    start, end = times.parse(s.started or s.created), times.parse(s.completed)
    if start is not None and end is not None:
        took = f" in {age(s.started or s.created, end)}"
    if s.phase == st.FAILED:
        why = f"{s.reason}: {s.message}"
        failed = [p for p in s.pods if p.phase == st.POD_FAILED and p.exit_code is not None]
        if failed:  # what the first failed step said (its exit, the error in its log)
            p = failed[0]
            why += f"; {step_name(*p.step)}: {p.message}"
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
    found = load_inputs(ex, filename, namespace)
    trainjobs, runtimes, dirs = found.trainjobs, found.runtimes, found.dirs
    submitted: list[TrainJob] = []
    for tj, where in zip(trainjobs, dirs, strict=True):
        name, ns = tj.metadata.name, namespace_of(ex, tj.metadata.namespace)
        if replace and name and ex.exists(name, ns):
            ex.delete(name, ns)
            out.print(f"{RESOURCE}/{name} deleted")
            try:
                ex.wait_gone(name, ns)
            except TimeoutError as e:
                raise TrainJobError(f"{e}; try again later") from None
        try:
            stored = ex.submit(tj, runtimes, cwd=where)  # a local job's commands run there
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
            first = watch(ex, name, ns, until=lambda s: bool(s.pods) or s.finished)
            if first.pods:
                job, index, job_index = default_step(first)
                # Progress while the steps before it (initializers) run.
                watch(ex, name, ns, until=_started(job, index, job_index))
                for line in ex.logs(name, ns, job, index, follow=True, job_index=job_index):
                    echo(line, flush=True)
            finish(watch(ex, name, ns, quiet=True))
        elif wait:
            finish(watch(ex, name, ns))


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
    known = [p.step for p in s.pods]
    job, index, job_index = parse_step(step, known) if step else default_step(s)
    for line in ex.logs(name, namespace, job, index, follow=follow, job_index=job_index):
        echo(line, flush=follow)


def _all_logs(ex: Executor, s: JobState, follow: bool) -> None:
    """Every pod's log with a ``[step]`` prefix: one after the other, or with ``follow`` as the
    lines come (:meth:`trainjob.executor.base.Executor.all_logs`)."""
    for pod, line in ex.all_logs(s, follow, opener=executor):
        echo(f"[{step_name(*pod.step)}] {line}", flush=follow)


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
