"""What the job commands share: the executor they act through, and kubectl's ways of printing.

:func:`executor` is the one place the CLI picks a backend (``--backend``, ``TRAINJOB_BACKEND``):
the local executor (its pods as processes, or with ``--backend container`` as containers of
their images), or a cluster's (:class:`trainjob.cluster.executor.KubernetesExecutor`); every
command then acts through the :class:`trainjob.executor.base.Executor` interface only. Printing
follows kubectl: plain columns three spaces apart, ``AGE`` as ``3m12s``, ``<none>`` for empty,
``-o json|yaml|name``, describe sections with underlined headers. Only what was asked goes to
stdout; progress and verdicts go to stderr (:data:`err`).
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Sequence
from enum import StrEnum
from typing import Annotated, Any

import typer
from rich.console import Console

from trainjob.api import constants as c
from trainjob.api import goyaml
from trainjob.api.trainer import Runtime, TrainJob
from trainjob.cli import TARGET, Backend
from trainjob.core import times
from trainjob.executor.base import Executor

RESOURCE = f"trainjob.{c.GROUP}"
out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False, soft_wrap=True)

Namespace = Annotated[str | None, typer.Option("--namespace", "-n", help="The namespace.")]


class Output(StrEnum):
    wide = "wide"
    json = "json"
    yaml = "yaml"
    name = "name"


OutputFormat = Annotated[Output | None, typer.Option("--output", "-o", help="wide|json|yaml|name")]


def executor() -> Executor:
    """The executor of the chosen backend (a new one: the local store's connection stays in the
    thread that opened it)."""
    if TARGET.backend is Backend.kubernetes:
        from trainjob.cluster.executor import KubernetesExecutor

        return KubernetesExecutor(TARGET.kubeconfig, TARGET.context)
    from trainjob.local.executor import LocalExecutor

    if TARGET.backend is Backend.container:
        return LocalExecutor(runner=container_runner())
    return LocalExecutor()


def container_runner() -> str:
    """The container backend's settings for jobs run now: the engine of
    ``TRAINJOB_CONTAINER_RUNTIME`` (docker or podman), else the one that runs here. Only jobs
    submitted through it run as containers; every other verb acts on any job of the home."""
    import os

    from trainjob.local.containers import ContainerSettings, engine

    found = engine.detect(os.environ.get("TRAINJOB_CONTAINER_RUNTIME") or None)
    return ContainerSettings(engine=found.command).to_json()


def namespace_of(ex: Executor, namespace: str | None) -> str:
    """``-n``, else ``default`` here or the kubeconfig context's namespace on a cluster."""
    return namespace or ex.default_namespace


def age(ts: str | None, until: float | None = None) -> str:
    """kubectl's short durations: 45s, 3m12s, 5h3m, 2d4h."""
    start = times.parse(ts)
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


def print_table(table: Columns) -> None:
    sys.stdout.write(table.render() + "\n")


def printed_as_objects(
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


def or_none(*values: str | None) -> list[str]:
    return [v or "<none>" for v in values]


def field(label: str, value: object) -> None:
    """A describe line: ``Label:`` padded to the values' column, then the value."""
    sys.stdout.write(f"{label + ':':<12}{value}\n")  # verbatim: messages quote logs


def print_section(title: str, headers: tuple[str, ...], rows: list[list[str]]) -> None:
    """A describe section as kubectl describe prints one (``Events:``): its title, then an
    indented table whose headers are underlined with dashes, or ``<none>`` beside the title."""
    if not rows:
        field(title, "<none>")
        return
    out.print(f"{title}:")
    table = Columns(*headers, indent="  ")
    table.add_row(*("-" * len(h) for h in headers))
    for row in rows:
        table.add_row(*row)
    print_table(table)
