"""The typer options several commands declare alike: ``-n/--namespace`` and ``-o/--output``.

Apart from :mod:`trainjob.cli.output` (how the commands print), which :mod:`trainjob.cli.fast`
uses without typer.
"""

from __future__ import annotations

from typing import Annotated

import typer

Namespace = Annotated[str | None, typer.Option("--namespace", "-n", help="The namespace.")]


OutputFormat = Annotated[
    str | None,
    typer.Option(
        "--output",
        "-o",
        metavar="FORMAT",
        help="wide, json, yaml, name, or jsonpath=TEMPLATE (kubectl's JSONPath, e.g. "
        "'{.items[*].metadata.name}').",
    ),
]
