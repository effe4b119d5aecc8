"""``trainjob plan -f FILE``: print the objects each TrainJob compiles to, without running anything.

Reads every document of every file (``-`` is stdin, a directory means its ``*.yaml|*.yml|*.json``;
:mod:`trainjob.cli.inputs`), validates the runtimes among them, resolves each TrainJob's runtime
(from the files first, then the built-in set, :func:`trainjob.executor.catalog.resolve`) and prints the
Plans as multi-document YAML or as a JSON list. Every problem in the input is reported, kubectl-style, before exiting 1; nothing is
printed on stdout unless every TrainJob compiles.

Registered on :data:`trainjob.cli.root.app`; the logic lives in :func:`plan_files` so that other clients
(tests, the SDK) can call it without the command line.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Annotated

import typer

from trainjob.cli import report
from trainjob.cli.root import app
from trainjob.errors import InvalidError, NotFoundError, TrainJobError

if TYPE_CHECKING:  # the models and the compiler load when a plan is made
    from trainjob.runtime.plan import Plan


class Output(StrEnum):
    yaml = "yaml"
    json = "json"


@dataclass
class Result:
    """What ``plan_files`` found: the Plans of the TrainJobs that compiled, and every error."""

    plans: list[Plan] = field(default_factory=list)
    errors: list[TrainJobError] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def plan_files(paths: list[str], namespace: str | None = None) -> Result:
    """Compile every TrainJob in ``paths``; collect every error instead of stopping at the first."""
    from trainjob.api import validation
    from trainjob.cli.inputs import read_inputs, usable
    from trainjob.executor import catalog
    from trainjob.runtime import compile

    found = read_inputs(paths, namespace)
    result = Result(errors=list(found.errors))
    for tj, _ in usable(found):
        try:
            result.plans.append(compile(tj, catalog.admit(tj, found.runtimes), validated=True))
        except (InvalidError, NotFoundError) as e:
            result.errors.append(e)
        else:  # the admission webhook's warnings, as kubectl would print them
            result.warnings.extend(validation.trainjob_warnings(tj))
    return result


def render(plans: list[Plan], output: Output) -> str:
    """The Plans as one multi-document YAML stream, or one JSON list of all their objects."""
    if output is Output.json:
        return json.dumps([o for p in plans for o in p.objects], indent=2) + "\n"
    return "---\n".join(p.to_yaml() for p in plans)


PLAN_HELP = (
    "Print the objects (JobSet, PodGroup, ...) each TrainJob compiles to; run nothing.\n\n"
    "A TrainJob's runtime comes from the files given, else from the built-in set "
    "(trainjob get runtimes). Invalid input: one line per problem on stderr, exit code 1, "
    "nothing on stdout.\n\n"
    "Images are the runtime's, as a cluster pulls them (the built-in torch-distributed: "
    "upstream's pytorch/pytorch:2.13.0 image); the local backend runs this environment's "
    "Python and torch instead, the container backend the image.\n\n"
    "Examples: trainjob plan -f job.yaml;  trainjob plan -f job.yaml -f runtime.yaml -o json"
)


@app.command("plan", help=PLAN_HELP)
def plan_command(
    filename: Annotated[
        list[str],
        typer.Option(
            "--filename",
            "-f",
            metavar="FILE",
            help="TrainJob and runtime manifests (YAML or JSON); '-' reads stdin, a directory "
            "its *.yaml, *.yml and *.json files. Repeatable.",
        ),
    ],
    output: Annotated[
        Output, typer.Option("--output", "-o", help="Output format: yaml or json.")
    ] = Output.yaml,
    namespace: Annotated[
        str | None,
        typer.Option(
            "--namespace",
            "-n",
            metavar="NAMESPACE",
            help="Namespace of objects that name none (default: default).",
        ),
    ] = None,
) -> None:
    result = plan_files(filename, namespace)
    for warning in result.warnings:
        sys.stderr.write(f"Warning: {warning}\n")
    if result.errors:
        for err in result.errors:
            report(err)
        raise typer.Exit(code=1)
    sys.stdout.write(render(result.plans, output))
