"""What ``trainjob get jobs`` prints, without typer: the table of jobs (kubectl's columns), the
objects with ``-o json|yaml|name|jsonpath=``, ``-l`` and ``--sort-by``, and ``-w``'s rows; and
``trainjob get runtimes``' table (:func:`list_runtimes`).

:func:`list_jobs` is the command's whole body: :mod:`trainjob.cli.get` calls it with what typer
parsed, :mod:`trainjob.cli.fast` with what it parsed of a plain ``get jobs`` (no typer, no
pydantic: the listing reads the store's columns, :meth:`trainjob.executor.base.Executor.states`).
``describe`` shows the same PROGRESS and ETA (:func:`progress_cells`). NODES is the TrainJob's
``spec.trainer.numNodes``, else its runtime's ``mlPolicy.numNodes`` (:class:`RuntimeNodes`, one
listing of the runtimes for the whole table), as the compiler resolves it; ``<default>`` only
when neither says.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from trainjob.api import constants as c
from trainjob.api import phases as tphases
from trainjob.cli.output import (
    RESOURCE,
    Columns,
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

if TYPE_CHECKING:
    from trainjob.executor.base import Executor
    from trainjob.executor.model import JobState


def list_jobs(
    names: list[str] | None,
    namespace: str | None,
    all_namespaces: bool,
    output: str | None,
    selector: str | None,
    sort_by: str | None,
    no_headers: bool,
    watch_: bool,
) -> None:
    """``get jobs``: the jobs of ``namespace`` (or every namespace, or those named), printed as
    ``output`` says; with ``watch_``, their rows again as they change, until Ctrl-C."""
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
    nodes = RuntimeNodes(ex)
    for s in states:
        table.add_row(*job_row(s, ns is None, fmt.wide, nodes))
    print_table(table, headers=not no_headers)
    if watch_:
        _watch_rows(ex, ns, set(names or ()), fmt.wide, table, nodes)


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
    is doing where that says more (Initializing, Restarting, Queued for this machine's
    capacity; :mod:`trainjob.api.phases`), with
    the condition's reason."""
    if s.finished:
        return s.phase, s.reason
    now = tphases.current((s.trainjob.get("status") or {}).get("conditions"))
    if now is None:
        return s.phase, s.reason
    says_more = now.type in (tphases.CONDITION_INITIALIZING, tphases.CONDITION_RESTARTING) or (
        now.reason == tphases.REASON_WAITING_FOR_RESOURCES  # Queued: the machine is busy
    )
    shown = now.type if says_more else s.phase
    return shown, s.reason or now.reason


class RuntimeNodes:
    """A job's node count where its TrainJob leaves it to the runtime: the runtime's
    ``spec.mlPolicy.numNodes`` (a TrainingRuntime of the job's namespace first, as a runtimeRef
    of that kind would name it, else the ClusterTrainingRuntime), the runtimes listed once, on
    first need."""

    def __init__(self, ex: Executor) -> None:
        self.ex = ex
        self.counts: dict[tuple[str, str], int] | None = None  # (namespace or "", name) -> n

    def __call__(self, s: JobState) -> int | None:
        if s.num_nodes is not None:
            return s.num_nodes
        if self.counts is None:
            self.counts = {}
            try:
                objects = self.ex.runtime_objects(None)
            except TrainJobError:  # not allowed to list them: the column says <default>
                objects = []
            for r in objects:
                meta, n = r.get("metadata") or {}, ((r.get("spec") or {}).get("mlPolicy") or {})
                if isinstance(n.get("numNodes"), int):
                    namespaced = r.get("kind") == c.TRAINING_RUNTIME_KIND
                    ns = str(meta.get("namespace") or "") if namespaced else ""
                    self.counts[(ns, str(meta.get("name")))] = n["numNodes"]
        name = s.runtime_name
        return self.counts.get((s.namespace, name), self.counts.get(("", name)))


def job_row(
    s: JobState,
    all_namespaces: bool,
    wide: bool,
    nodes: Callable[[JobState], int | None] | None = None,
) -> list[str]:
    progress, eta, loss = progress_cells(s)
    status, reason = status_cell(s)
    count = nodes(s) if nodes is not None else s.num_nodes
    row = [
        s.name,
        status,
        s.runtime_name,
        str(count or "<default>"),
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


# the columns that tick with the clock alone
_CLOCKS = frozenset({"AGE", "DURATION", "ETA", "STARTED"})


def _watch_rows(
    ex: Executor,
    ns: str | None,
    names: set[str],
    wide: bool,
    first: Columns,
    nodes: RuntimeNodes | None = None,
) -> None:
    """``kubectl get -w``: a job's row again whenever what it shows changes (new jobs too), in
    the first table's columns, until Ctrl-C (which ends it quietly)."""
    widths = first.widths()
    # a row that would read as the last one printed for its job, but for the clocks, is not
    # printed again (a phase condition no column shows, such as Running, changed)
    clocks = {i for i, h in enumerate(first.rows[0]) if h in _CLOCKS}
    printed: dict[tuple[str, str], list[str]] = {}
    updates = ex.watch_states(ns)
    try:
        for s in next(updates):  # the state the table shows
            row = job_row(s, ns is None, wide, nodes)
            printed[(s.namespace, s.name)] = [c for i, c in enumerate(row) if i not in clocks]
        for changed in updates:
            for s in changed:
                if names and s.name not in names:
                    continue
                row = job_row(s, ns is None, wide, nodes)
                seen = [c for i, c in enumerate(row) if i not in clocks]
                if printed.get((s.namespace, s.name)) == seen:
                    continue
                printed[(s.namespace, s.name)] = seen
                widths = [max(w, len(cell)) for w, cell in zip(widths, row, strict=True)]
                echo(first.line(row, widths), flush=True)
    except KeyboardInterrupt:
        return


T = TypeVar("T")


def list_runtimes(
    names: list[str] | None, namespace: str | None, output: str | None, no_headers: bool
) -> None:
    """``get runtimes``: NAME KIND FRAMEWORK NODES (IMAGE with ``-o wide``) of the runtimes (those
    named), read as plain objects (:meth:`~trainjob.executor.base.Executor.runtime_objects`: the
    local backend builds no model); ``-o json|yaml|name|jsonpath=`` prints the API models."""
    fmt = output_format(output)
    ex = executor()
    namespace = namespace_of(ex, namespace)
    if fmt.objects:
        rts = _named(ex.list_runtimes(namespace), names, lambda r: r.metadata.name or "")
        printed_as_objects(
            rts,
            fmt,
            lambda r: f"{r.kind.lower()}.{c.GROUP}/{r.metadata.name}",
            single=len(names or ()) == 1,
        )
        return
    objs = _named(ex.runtime_objects(namespace), names, _runtime_name)
    headers = ["NAME", "KIND", "FRAMEWORK", "NODES"]
    if fmt.wide:
        headers.append("IMAGE")
    table = Columns(*headers)
    for r in objs:
        labels = (r.get("metadata") or {}).get("labels") or {}
        policy = (r.get("spec") or {}).get("mlPolicy") or {}
        row = [
            _runtime_name(r),
            str(r.get("kind") or ""),
            str(labels.get(c.LABEL_FRAMEWORK, "<none>")),
            str(policy.get("numNodes") or 1),
        ]
        if fmt.wide:
            row.append(",".join(runtime_images(r)) or "<none>")
        table.add_row(*row)
    print_table(table, headers=not no_headers)


def _runtime_name(r: Mapping[str, Any]) -> str:
    return str((r.get("metadata") or {}).get("name") or "")


def _named(items: Sequence[T], names: list[str] | None, name_of: Callable[[T], str]) -> list[T]:
    """The runtimes ``names`` asks for, in its order (all when none); NotFoundError naming the
    first missing one and those there are."""
    if not names:
        return list(items)
    by_name = {name_of(r): r for r in items}
    missing = [n for n in names if n not in by_name]
    if missing:
        raise NotFoundError(
            f'clustertrainingruntimes.{c.GROUP} "{missing[0]}" not found '
            f"(runtimes: {', '.join(sorted(n for n in by_name if n))})"
        )
    return [by_name[n] for n in names]


def runtime_images(r: Mapping[str, Any]) -> list[str]:
    """The images of a runtime's containers, each once, in order."""
    images: list[str] = []
    for rj in ((r.get("spec") or {}).get("template") or {}).get("spec", {}).get(
        "replicatedJobs"
    ) or ():
        pod = (((rj.get("template") or {}).get("spec") or {}).get("template") or {}).get("spec")
        for ctr in (pod or {}).get("containers") or ():
            image = ctr.get("image")
            if image and image not in images:
                images.append(image)
    return images
