"""kubectl-style job commands: logs, suspend, resume, delete, apply (run: ``cli/run.py``;
get/describe: ``cli/get.py``, ``cli/describe.py``).

``logs NAME [--step node-1] [--all-steps] [-f]`` and ``suspend|resume|delete NAME`` read or change
jobs; ``apply -f`` creates or brings jobs to their files; ``-n NAMESPACE`` everywhere. Mutations
print ``trainjob.trainer.kubeflow.org/NAME created`` lines; progress and final states go to stderr
so stdout carries only what was asked for (logs).

Registered on :data:`trainjob.cli.root.app`; every command acts through the one executor interface
(:class:`trainjob.executor.base.Executor`) of the chosen backend (:func:`trainjob.cli.output.
executor`): the local executor, or with ``--backend kubernetes`` (``TRAINJOB_BACKEND``) a
cluster's. Without ``-n`` a command acts in ``default`` here and in the kubeconfig context's
namespace on a cluster.
"""

from __future__ import annotations

from typing import Annotated

import typer

from trainjob.cli.options import Namespace
from trainjob.cli.output import (
    RESOURCE,
    echo,
    err,
    executor,
    namespace_of,
    out,
)
from trainjob.cli.root import app
from trainjob.cli.run import kept_note, load_inputs
from trainjob.errors import (
    ErrorList,
    FieldError,
    InvalidError,
    NotFoundError,
    TrainJobError,
)
from trainjob.executor.base import Executor
from trainjob.executor.model import JobState
from trainjob.executor.steps import default_step, parse_step, step_name

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
    tail: Annotated[
        int,
        typer.Option(
            "--tail",
            metavar="N",
            help="Only the last N lines (then new ones, with -f); -1: all of them.",
        ),
    ] = -1,
    timestamps: Annotated[
        bool,
        typer.Option("--timestamps", help="Begin each line with when it was written (RFC 3339)."),
    ] = False,
    previous: Annotated[
        bool,
        typer.Option(
            "--previous", "-p", help="The step's log before its last restart (its previous pod)."
        ),
    ] = False,
) -> None:
    """Print the logs of one step of a TrainJob (default: the trainer's first), or of all."""
    if step and all_steps:
        raise TrainJobError("--step and --all-steps select different logs: use one of them")
    if previous and (follow or all_steps):
        raise TrainJobError("--previous reads one ended log: without -f and --all-steps")
    if tail < -1:
        raise TrainJobError(f"--tail must be -1 (all lines) or at least 0, got {tail}")
    lines = None if tail == -1 else tail
    ex = executor()
    namespace = namespace_of(ex, namespace)
    s = ex.state(name, namespace)
    if all_steps:
        _all_logs(ex, s, follow, lines, timestamps)
        return
    known = [p.step for p in s.pods]
    job, index, job_index = parse_step(step, known) if step else default_step(s)
    for line in ex.logs(
        name,
        namespace,
        job,
        index,
        follow=follow,
        job_index=job_index,
        tail=lines,
        previous=previous,
        timestamps=timestamps,
    ):
        echo(line, flush=follow)


def _all_logs(
    ex: Executor, s: JobState, follow: bool, tail: int | None = None, timestamps: bool = False
) -> None:
    """Every pod's log with a ``[step]`` prefix: one after the other, or with ``follow`` as the
    lines come (:meth:`trainjob.executor.base.Executor.all_logs`)."""
    for pod, line in ex.all_logs(s, follow, opener=executor, tail=tail, timestamps=timestamps):
        if timestamps:  # kubectl: the timestamp first, then the prefix
            stamp, _, text = line.partition(" ")
            echo(f"{stamp} [{step_name(*pod.step)}] {text}", flush=follow)
        else:
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


def _selected(
    ex: Executor, names: list[str], ns: str, everything: bool, files: list[str] | None,
    selector: str | None, given: str | None = None,
) -> list[tuple[str, str]]:  # fmt: skip
    """(namespace, name) of the jobs ``delete`` acts on: the names, the TrainJobs of ``-f`` files
    (in ``-n``'s namespace, ``given``, as ``run -f`` puts them), every job of the namespace
    (``--all``), or those ``-l`` selects."""
    ways = sum([bool(names), everything, bool(files), bool(selector) and not everything])
    if ways != 1:
        raise TrainJobError(
            "say which jobs: NAME..., --all, -l SELECTOR or -f FILE (one of them; -l with --all "
            "is -l)"
        )
    if files:
        from trainjob.cli.inputs import read_inputs

        found = read_inputs(files, given)
        if found.errors:
            raise ErrorList(list(found.errors))
        return [
            (namespace_of(ex, tj.metadata.namespace or ns), tj.metadata.name or "")
            for tj in found.trainjobs
        ]
    if names:
        return [(ns, n) for n in names]
    from trainjob.cli.listing import select

    return [(s.namespace, s.name) for s in select(ex.states(ns, pods=False), selector, None)]


@app.command("delete")
def delete_command(
    names: Annotated[list[str] | None, typer.Argument(help="Job names.")] = None,
    namespace: Namespace = None,
    all_: Annotated[
        bool, typer.Option("--all", help="Every job of the namespace (-l: those it selects).")
    ] = False,
    filename: Annotated[
        list[str] | None,
        typer.Option(
            "--filename", "-f", metavar="FILE", help="The TrainJobs of these files; - is stdin."
        ),
    ] = None,
    selector: Annotated[
        str | None,
        typer.Option("--selector", "-l", metavar="SELECTOR", help="Jobs whose labels match."),
    ] = None,
    purge: Annotated[
        bool,
        typer.Option(
            "--purge",
            help="Also remove the jobs' outputs (the volumes they keep: the LLM trainer's "
            "output_dir, checkpoints, downloads), saying what is removed.",
        ),
    ] = False,
) -> None:
    """Delete TrainJobs and their logs; their outputs stay (see describe) unless --purge.
    delete optimizationjob NAME... deletes sweeps and their trials."""
    from trainjob.cli import sweeps

    is_sweep, sweep_names = sweeps.split_kind(list(names or ()))
    if is_sweep:
        sweeps.delete_sweeps(sweep_names, namespace, purge)
        return
    ex = executor()
    ns = namespace_of(ex, namespace)
    targets = _selected(ex, list(names or ()), ns, all_, filename, selector, namespace)
    if not targets:
        err.print("No resources found")
        return
    missing = []
    for job_ns, name in targets:
        note = ""
        try:
            if purge:
                for o in ex.outputs(name, job_ns):
                    if o.name != "output_dir":
                        err.print(f"removing {o.location} ({o.description})", markup=False)
            else:
                note = kept_note(ex, name, job_ns)
            ex.delete(name, job_ns, purge=purge)
        except NotFoundError as e:
            missing.append(e)  # as kubectl: the others are deleted, then the error, exit 1
            continue
        out.print(f"{RESOURCE}/{name} deleted")
        if note:
            err.print(note, markup=False)
    if missing:
        raise ErrorList(list(missing))


# -- apply --------------------------------------------------------------------------------------


def _changes(want: object, have: object, path: str) -> list[str]:
    """The fields of ``want`` that ``have`` does not hold with the same value (what a server-side
    apply of ``want`` would change): dicts compared key by key, anything else whole."""
    if isinstance(want, dict) and isinstance(have, dict):
        out = []
        for k, v in want.items():
            out += _changes(v, have.get(k), f"{path}.{k}")
        return out
    return [] if want == have else [path]


def _immutable(path: str) -> str:
    if path.startswith("metadata."):
        return (
            "trainjob apply does not change an existing job's labels or annotations: delete it "
            "first, or trainjob run -f ... --replace"
        )
    return "field is immutable once the TrainJob exists: delete it first, or trainjob run -f ... --replace"


@app.command("apply")
def apply_command(
    filename: Annotated[
        list[str],
        typer.Option("--filename", "-f", metavar="FILE", help="TrainJob (and runtime) files."),
    ],
    namespace: Namespace = None,
) -> None:
    """Create the TrainJobs of the files, or bring existing ones to them (kubectl apply).

    A new job is created (and started); an existing one is unchanged when the file says what it
    has, and suspended or resumed when the file changes spec.suspend. A TrainJob's other fields
    cannot change once it runs (as its admission webhook rules): delete it, or run -f --replace.
    """
    ex = executor()
    found = load_inputs(ex, filename, namespace)
    for tj, where in zip(found.trainjobs, found.dirs, strict=True):
        name, ns = tj.metadata.name or "", namespace_of(ex, tj.metadata.namespace)
        if not name or not ex.exists(name, ns):
            stored = ex.submit(tj, found.runtimes, cwd=where)
            out.print(f"{RESOURCE}/{stored.metadata.name} created")
            continue
        want, have = tj.to_dict(), ex.get(name, ns).to_dict()
        spec_want = dict(want.get("spec") or {})
        suspend = spec_want.pop("suspend", None)
        changed = _changes(spec_want, have.get("spec") or {}, "spec")
        for part in ("labels", "annotations"):
            changed += _changes(
                (want.get("metadata") or {}).get(part) or {},
                (have.get("metadata") or {}).get(part) or {},
                f"metadata.{part}",
            )
        if changed:
            raise InvalidError(
                [
                    FieldError.forbidden(f, _immutable(f))
                    for f in changed
                ],
                "TrainJob",
                name,
            )  # fmt: skip
        is_suspended = bool((have.get("spec") or {}).get("suspend"))
        if suspend is not None and bool(suspend) != is_suspended:
            (ex.suspend if suspend else ex.resume)(name, ns)
            out.print(f"{RESOURCE}/{name} configured")
        else:
            out.print(f"{RESOURCE}/{name} unchanged")
