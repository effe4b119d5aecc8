"""What the job commands share: the executor they act through, and kubectl's ways of printing.

:func:`executor` is the one place the CLI picks a backend (``--backend``, ``TRAINJOB_BACKEND``):
the local executor (its pods as processes, or with ``--backend container`` as containers of
their images), or a cluster's (:class:`trainjob.cluster.executor.KubernetesExecutor`); every
command then acts through the :class:`trainjob.executor.base.Executor` interface only. Printing
follows kubectl: plain columns three spaces apart, ``AGE`` as ``3m12s``, ``<none>`` for empty,
``-o json|yaml|name``, describe sections with underlined headers. Only what was asked goes to
stdout; progress and verdicts go to stderr (:data:`err`).
"""

# No ``from __future__ import annotations`` here: a named tuple's string annotations are each
# compiled (typing.ForwardRef), and the first compile() of a process builds the AST types,
# about 3 ms of every ``trainjob get jobs`` (benchmarks/cli_startup.py).

import json
import sys
import time
from collections.abc import Callable, Sequence
from enum import StrEnum
from typing import TYPE_CHECKING, Any, NamedTuple, cast

from trainjob import text
from trainjob.api import constants as c
from trainjob.cli import TARGET, Backend
from trainjob.core import times
from trainjob.errors import TrainJobError

if TYPE_CHECKING:  # the API models (pydantic) and rich load when a command uses them
    from rich.console import Console

    from trainjob.api.trainer import Runtime, TrainJob
    from trainjob.executor.base import Executor

RESOURCE = f"trainjob.{c.GROUP}"


class _LazyConsole:
    """A rich Console made on first use: ``get jobs`` and ``version`` print plain lines and never
    pay for importing rich (a spinner, ``run --wait``'s, does)."""

    def __init__(self, **settings: Any) -> None:
        self._settings = settings
        self._console: Console | None = None

    def __getattr__(self, name: str) -> Any:
        if self._console is None:
            from rich.console import Console

            self._console = Console(**self._settings)
        return getattr(self._console, name)


out = cast("Console", _LazyConsole(highlight=False, soft_wrap=True))
err = cast("Console", _LazyConsole(stderr=True, highlight=False, soft_wrap=True))


def note(line: str) -> None:
    """A line for the user on stderr, verbatim (no markup): ``No resources found ...``."""
    sys.stderr.write(line + "\n")


class Output(StrEnum):
    wide = "wide"
    json = "json"
    yaml = "yaml"
    name = "name"
    jsonpath = "jsonpath"


class Format(NamedTuple):
    """An ``-o`` value: its kind (None: the table), and a JSONPath template."""

    kind: Output | None = None
    template: str = ""

    @property
    def wide(self) -> bool:
        return self.kind is Output.wide

    @property
    def objects(self) -> bool:
        """Whether the objects themselves are printed (json, yaml, name, jsonpath)."""
        return self.kind in (Output.json, Output.yaml, Output.name, Output.jsonpath)


def output_format(value: str | None) -> Format:
    """``-o`` as kubectl reads it; an unknown format is kubectl's error, naming the allowed ones."""
    if value is None or value == "":
        return Format()
    kind, sep, template = value.partition("=")
    if kind == Output.jsonpath and sep:
        from trainjob.core import jsonpath

        try:
            jsonpath.parse(template)
        except ValueError as e:
            raise TrainJobError(f"error parsing jsonpath {template}, {e}") from None
        return Format(Output.jsonpath, template)
    if value in (Output.wide, Output.json, Output.yaml, Output.name):
        return Format(Output(value))
    allowed = "json, jsonpath=TEMPLATE, name, wide, yaml"
    raise TrainJobError(
        f'unable to match a printer suitable for the output format "{value}", allowed formats '
        f"are: {allowed}"
    )


def executor() -> "Executor":
    """The executor of the chosen backend (a new one: the local store's connection stays in the
    thread that opened it)."""
    if TARGET.backend is Backend.kubernetes:
        from trainjob.cluster.executor import KubernetesExecutor

        return KubernetesExecutor(TARGET.kubeconfig, TARGET.context)
    from trainjob.local.client.executor import LocalExecutor

    if TARGET.backend is Backend.container:
        return LocalExecutor(runner=container_runner())
    return LocalExecutor()


def container_runner() -> str:
    """The container backend's settings for jobs run now: the engine of
    ``TRAINJOB_CONTAINER_RUNTIME`` (docker or podman), else the one that runs here. Only jobs
    submitted through it run as containers; every other verb acts on any job of the home."""
    import os

    from trainjob.local.job.containers import ContainerSettings, engine

    found = engine.detect(os.environ.get("TRAINJOB_CONTAINER_RUNTIME") or None)
    return ContainerSettings(engine=found.command).to_json()


def namespace_of(ex: "Executor", namespace: str | None) -> str:
    """``-n``, else ``default`` here or the kubeconfig context's namespace on a cluster."""
    return namespace or ex.default_namespace


def age(ts: str | None, until: float | None = None) -> str:
    """kubectl's short durations: 45s, 3m12s, 5h3m, 2d4h."""
    start = times.parse(ts)
    if start is None:
        return "<none>"
    return duration(int((until or time.time()) - start))


def duration(secs: int) -> str:
    """``age``'s format for a number of seconds (an ETA)."""
    secs = max(0, secs)
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
        # cells may quote logs (a pod's message): no terminal escapes, one line each
        self.rows.append([text.clean(c).replace("\n", " ") for c in cells])

    def render(self) -> str:
        widths = self.widths()
        return "\n".join(self.line(r, widths) for r in self.rows)

    def widths(self) -> list[int]:
        return [max(len(r[i]) for r in self.rows) for i in range(len(self.rows[0]))]

    def line(self, cells: list[str], widths: list[int]) -> str:
        """One row in columns of at least ``widths`` (also what ``kubectl get -w`` prints)."""
        padded = [c.ljust(w) for c, w in zip(cells, widths, strict=True)]
        return (self.indent + "   ".join(padded)).rstrip()


def echo(line: str, flush: bool = False) -> None:
    """A log line, verbatim (no markup, no emoji codes, no wrapping), to stdout."""
    sys.stdout.write(line + "\n")
    if flush:
        sys.stdout.flush()


def print_table(table: Columns, headers: bool = True) -> None:
    """The table; without its header line when not ``headers`` (``--no-headers``)."""
    if not headers:
        widths = table.widths()
        for row in table.rows[1:]:
            sys.stdout.write(table.line(row, widths) + "\n")
        return
    sys.stdout.write(table.render() + "\n")


def printed_as_objects(
    objs: "Sequence[TrainJob | Runtime]",
    output: Output | Format | None,
    resource: Callable[[Any], str],
    *,
    single: bool | None = None,
) -> bool:
    """``-o json|yaml|jsonpath=`` and ``-o name``: print ``objs`` so, say True.

    As kubectl: one object when ``single`` (a command given one name), else a ``List`` of them,
    even of one or none. ``single=None`` keeps the older rule: one object when there is one.
    """
    fmt = output if isinstance(output, Format) else Format(output)
    if fmt.kind is Output.name:
        for obj in objs:
            sys.stdout.write(resource(obj) + "\n")
        return True
    if not fmt.objects:
        return False
    dicts = [obj.to_dict() for obj in objs]
    alone = len(dicts) == 1 if single is None else single and len(dicts) == 1
    body = dicts[0] if alone else {"apiVersion": "v1", "kind": "List", "items": dicts}
    if fmt.kind is Output.jsonpath:
        from trainjob.core import jsonpath

        sys.stdout.write(jsonpath.render(fmt.template, body))  # no newline added, as kubectl
    elif fmt.kind is Output.json:
        sys.stdout.write(json.dumps(body, indent=2) + "\n")
    else:
        from trainjob.api import goyaml

        sys.stdout.write(goyaml.dump_all([body]))
    return True


def or_none(*values: str | None) -> list[str]:
    return [v or "<none>" for v in values]


def field(label: str, value: object) -> None:
    """A describe line: ``Label:`` padded to the values' column, then the value (an empty
    label: a further value of the line above)."""
    head = f"{label + ':':<12}" if label else " " * 12
    # messages quote logs: their words verbatim, but no terminal escapes or control characters
    sys.stdout.write(f"{head}{text.clean(str(value))}\n")


def print_section(title: str, headers: tuple[str, ...], rows: list[list[str]]) -> None:
    """A describe section as kubectl describe prints one (``Events:``): its title, then an
    indented table whose headers are underlined with dashes, or ``<none>`` beside the title."""
    if not rows:
        field(title, "<none>")
        return
    sys.stdout.write(f"{title}:\n")
    table = Columns(*headers, indent="  ")
    table.add_row(*("-" * len(h) for h in headers))
    for row in rows:
        table.add_row(*row)
    print_table(table)
