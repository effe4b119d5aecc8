"""``trainjob scale NAME --nodes N``: an elastic TrainJob's node count (KEP-2903), as kubectl's
``scale --replicas``: within its elasticPolicy's bounds; prints ``trainjob.../NAME scaled``.

Registered on :data:`trainjob.cli.root.app`; acts through the chosen backend's executor
(:meth:`trainjob.executor.base.Executor.scale`).
"""

from __future__ import annotations

from typing import Annotated

import typer

from trainjob.cli.options import Namespace
from trainjob.cli.output import RESOURCE, executor, namespace_of, out
from trainjob.cli.root import app


@app.command("scale")
def scale_command(
    name: str,
    nodes: Annotated[
        int, typer.Option("--nodes", help="The new node count, within minNodes..maxNodes.")
    ],
    namespace: Namespace = None,
) -> None:
    """Set the number of nodes of an elastic TrainJob (new nodes join at the next rendezvous)."""
    ex = executor()
    ex.scale(name, namespace_of(ex, namespace), nodes)
    out.print(f"{RESOURCE}/{name} scaled")
