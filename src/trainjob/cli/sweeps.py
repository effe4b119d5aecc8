"""The CLI's OptimizationJob verbs: ``get optimizationjobs``, ``describe optimizationjob``,
``delete optimizationjob`` and ``run -f`` of an OptimizationJob file.

``get optimizationjobs [NAME...] [-o wide|json|yaml|name] [-w]``: NAME STATUS TRIALS (finished /
numTrials) BEST (the best trial's objective) AGE. ``describe optimizationjob NAME``: its
objective, algorithm and trial settings, the best trial, every trial (name, parameters,
objective, phase, why it stopped or failed) and its events. A sweep's trials are TrainJobs:
``get jobs -l trainer.kubeflow.org/optimization-job=NAME`` lists them. The commands are thin
(``cli/get.py``, ``cli/describe.py``, ``cli/jobs.py``, ``cli/run.py``) and act here, through the
backend's :class:`~trainjob.executor.sweeps.SweepExecutor` only (:func:`sweep_executor`).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

from trainjob.api import constants as c
from trainjob.cli import TARGET, Backend
from trainjob.cli.output import (
    Columns,
    age,
    err,
    field,
    namespace_of,
    note,
    or_none,
    out,
    output_format,
    print_section,
    print_table,
    printed_as_objects,
)
from trainjob.errors import ErrorList, NotFoundError, TrainJobError
from trainjob.executor import sweeps

if TYPE_CHECKING:
    from trainjob.api.optimization import OptimizationJob
    from trainjob.executor.sweeps import SweepExecutor
    from trainjob.workspace.pack import Snapshot

RESOURCE = f"optimizationjob.{c.GROUP}"
NAMES = ("optimizationjob", "optimizationjobs", "oj")
"""What kubectl users call the kind (``delete optimizationjob NAME``, ``get oj``)."""
DONE = sweeps.TRIAL_DONE


def sweep_executor() -> SweepExecutor:
    """The SweepExecutor of the chosen backend."""
    if TARGET.backend is Backend.kubernetes:
        from trainjob.cli.output import executor
        from trainjob.cluster.executor import KubernetesExecutor
        from trainjob.cluster.sweeps import KubernetesSweepExecutor

        trials = executor()
        assert isinstance(trials, KubernetesExecutor)
        return KubernetesSweepExecutor(trials)
    from trainjob.cli.output import container_runner
    from trainjob.local.client.sweeps import LocalSweepExecutor

    runner = container_runner() if TARGET.backend is Backend.container else ""
    return LocalSweepExecutor(runner=runner)


# -- get ----------------------------------------------------------------------------------------


def _status(job: OptimizationJob) -> dict[str, Any]:
    return job.status.to_dict() if job.status is not None else {}


def best_trial(status: dict[str, Any]) -> dict[str, Any] | None:
    """The status's entry of the best trial (``result.trainJobName``), None before one."""
    name = (status.get("result") or {}).get("trainJobName")
    return next((t for t in status.get("trials") or () if t.get("name") == name), None)


def row(job: OptimizationJob, wide: bool = False) -> list[str]:
    status = _status(job)
    trials = status.get("trials") or ()
    done = sum(1 for t in trials if t.get("phase") in DONE)
    best = best_trial(status)
    cells = [
        job.metadata.name or "",
        sweeps.phase(status),
        f"{done}/{job.spec.num_trials or 1}",
        (best or {}).get("objective") or "<none>",
        age(job.metadata.creation_timestamp),
    ]
    if wide:
        cells[4:4] = [
            job.spec.objectives[0].metric,
            sweeps.algorithm(job),
            (best or {}).get("name") or "<none>",
        ]
    return cells


HEADERS = ("NAME", "STATUS", "TRIALS", "BEST", "AGE")
WIDE_HEADERS = ("NAME", "STATUS", "TRIALS", "BEST", "OBJECTIVE", "ALGORITHM", "BEST-TRIAL", "AGE")


def list_sweeps(
    names: Sequence[str] | None,
    namespace: str | None,
    output: str | None,
    no_headers: bool = False,
    watch: bool = False,
) -> None:
    """``get optimizationjobs``."""
    ex = sweep_executor()
    ns = namespace_of(ex.trials, namespace)
    fmt = output_format(output)
    jobs = _named(ex, ns, names)
    single = bool(names) and len(names or ()) == 1
    if printed_as_objects(
        cast("Sequence[Any]", jobs), fmt, lambda j: f"{RESOURCE}/{j.metadata.name}", single=single
    ):
        return
    table = Columns(*(WIDE_HEADERS if fmt.wide else HEADERS))
    for j in jobs:
        table.add_row(*row(j, fmt.wide))
    if not jobs and not watch:
        note(f"No resources found in {ns} namespace.")
        return
    print_table(table, headers=not no_headers)
    if watch:
        _watch(ex, ns, names, fmt.wide, table)


def _named(ex: SweepExecutor, ns: str, names: Sequence[str] | None) -> list[OptimizationJob]:
    if not names:
        return ex.list(ns)
    found, missing = [], []
    for n in names:
        try:
            found.append(ex.get(n, ns))
        except NotFoundError as e:
            missing.append(e)
    if missing:
        raise ErrorList(list(missing))
    return found


def _watch(
    ex: SweepExecutor, ns: str, names: Sequence[str] | None, wide: bool, table: Columns
) -> None:
    """``-w``: a job's row again each time it reads differently (its age aside)."""
    widths = table.widths()
    last = {r[0]: r[:-1] for r in table.rows[1:]}
    try:
        while True:
            time.sleep(max(ex.poll_interval, 0.5))
            for j in _named(ex, ns, names) if names else ex.list(ns):
                cells = row(j, wide)
                if last.get(cells[0]) != cells[:-1]:
                    last[cells[0]] = cells[:-1]
                    out.print(table.line(cells, widths), markup=False, highlight=False)
    except KeyboardInterrupt:
        return


# -- describe -----------------------------------------------------------------------------------


def describe_sweep(name: str, namespace: str | None) -> None:
    """``describe optimizationjob NAME``."""
    ex = sweep_executor()
    ns = namespace_of(ex.trials, namespace)
    job = ex.get(name, ns)
    status = _status(job)
    spec = job.spec
    field("Name", job.metadata.name)
    field("Namespace", job.metadata.namespace)
    field("Status", sweeps.phase(status))
    field(
        "Created", f"{job.metadata.creation_timestamp} ({age(job.metadata.creation_timestamp)} ago)"
    )
    obj = spec.objectives[0]
    field("Objective", f"{obj.metric} ({obj.direction or 'Minimize'})")
    field("Algorithm", sweeps.algorithm(job))
    trials = status.get("trials") or ()
    done = sum(1 for t in trials if t.get("phase") in DONE)
    field(
        "Trials",
        f"{done} of {spec.num_trials or 1} finished, {spec.parallel_trials or 1} at a time",
    )
    if spec.max_failed_trials is not None:
        field("MaxFailed", spec.max_failed_trials)
    if spec.early_stopping is not None and spec.early_stopping.median is not None:
        m = spec.early_stopping.median
        field(
            "EarlyStop",
            f"median (after {m.min_trials if m.min_trials is not None else 3} trials, from step "
            f"{m.start_step if m.start_step is not None else 1})",
        )
    best = best_trial(status)
    if best is not None:
        params = _params(best)
        field("Best", f"{best.get('name')}: {obj.metric}={best.get('objective')} ({params})")
    else:
        field("Best", "<none>")
    print_section(
        "Conditions",
        ("Type", "Status", "Reason", "Message"),
        [
            or_none(x.get("type"), x.get("status"), x.get("reason"), x.get("message"))
            for x in status.get("conditions") or ()
        ],
    )
    print_section(
        "Trials",
        ("Name", "Parameters", "Objective", "Phase", "Reason"),
        [
            or_none(t.get("name"), _params(t), t.get("objective"), t.get("phase"), t.get("reason"))
            for t in trials
        ],
    )
    events = ex.events(name, ns)
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
            for e in events
        ],
    )


def _params(trial: dict[str, Any]) -> str:
    return ",".join(f"{p['name']}={p['value']}" for p in trial.get("parameters") or ())


# -- delete and run -----------------------------------------------------------------------------


def delete_sweeps(names: Sequence[str], namespace: str | None, purge: bool) -> None:
    """``delete optimizationjob NAME...``: each job and its trials (their outputs kept unless
    ``purge``)."""
    if not names:
        raise TrainJobError("say which OptimizationJobs: delete optimizationjob NAME...")
    ex = sweep_executor()
    ns = namespace_of(ex.trials, namespace)
    missing = []
    for n in names:
        try:
            ex.delete(n, ns, purge=purge)
        except NotFoundError as e:
            missing.append(e)
            continue
        out.print(f"{RESOURCE}/{n} deleted")
        if not purge:
            err.print(
                f"{RESOURCE}/{n}: its trials' outputs are kept (delete optimizationjob --purge "
                "removes them)",
                markup=False,
            )
    if missing:
        raise ErrorList(list(missing))


def split_kind(names: Sequence[str]) -> tuple[bool, list[str]]:
    """Whether ``delete`` was asked about OptimizationJobs (``optimizationjob NAME...`` or
    ``optimizationjob/NAME``), and the names."""
    if names and names[0].lower() in NAMES:
        return True, list(names[1:])
    if names and all("/" in n and n.split("/", 1)[0].lower() in NAMES for n in names):
        return True, [n.split("/", 1)[1] for n in names]
    return False, list(names)


def run_sweeps(
    jobs: Sequence[OptimizationJob],
    dirs: Sequence[str],
    wait: bool,
    workspace: Snapshot | None = None,
) -> None:
    """``run -f`` of OptimizationJobs: create each (``created``; with ``--workdir`` its trials
    run the ``workspace`` snapshot), then with ``--wait`` follow each until it finishes (a line
    per change on stderr; exit 1 when it failed)."""
    ex = sweep_executor()
    made = []
    for job, where in zip(jobs, dirs, strict=True):
        stored = ex.create(job, cwd=where, workspace=workspace)
        made.append(stored)
        out.print(f"{RESOURCE}/{stored.metadata.name} created")
    if not wait:
        return
    for job in made:
        name, ns = job.metadata.name or "", job.metadata.namespace or "default"
        last = ""
        final: OptimizationJob = job
        for final in ex.watch(name, ns):
            line = "  ".join(row(final)[:4])
            if line != last:
                err.print(line, markup=False, highlight=False)
                last = line
        status = _status(final)
        if sweeps.phase(status) == sweeps.FAILED:
            cond: dict[str, Any] = next(
                (x for x in status.get("conditions") or () if x.get("type") == sweeps.FAILED), {}
            )
            raise TrainJobError(
                f"{RESOURCE}/{name} Failed: {cond.get('reason')}: {cond.get('message')}"
            )
        best = best_trial(status)
        said = (
            f": best {best.get('name')} ({_params(best)}) {best.get('objective')}" if best else ""
        )
        err.print(f"{RESOURCE}/{name} Complete{said}", markup=False, highlight=False)
