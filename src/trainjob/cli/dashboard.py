"""``trainjob dashboard``: the jobs, their progress, loss curves and live logs in a browser, and
the sweeps (OptimizationJobs) with their trials.

Over the executor the other commands use (:func:`trainjob.cli.output.executor`: ``--backend``,
``--kubeconfig``, ``--context``; on a cluster, what the user's own credentials may see), and the
sweep executor ``get optimizationjobs`` uses (:func:`trainjob.cli.sweeps.sweep_executor`). The
web app is :mod:`trainjob.dashboard`; it needs the ``dashboard`` extra (Starlette, uvicorn).
"""

from __future__ import annotations

from typing import Annotated

import typer

from trainjob import extras
from trainjob.cli.output import executor
from trainjob.cli.root import app


@app.command()
def dashboard(
    host: Annotated[
        str,
        typer.Option(
            "--host",
            help="Address to listen on. Anything but loopback requires a token, printed at start "
            "(or $TRAINJOB_DASHBOARD_TOKEN).",
        ),
    ] = "127.0.0.1",
    port: Annotated[
        int, typer.Option("--port", min=0, max=65535, help="Port to listen on (0: any free one).")
    ] = 8090,
    open_browser: Annotated[
        bool, typer.Option("--open", help="Open the dashboard in the default browser.")
    ] = False,
) -> None:
    """Serve a web dashboard of the jobs: progress, loss curves, live logs, events, YAML
    (docs/dashboard.md)."""
    extras.require("trainjob dashboard", extras.DASHBOARD)
    from trainjob.cli.sweeps import sweep_executor
    from trainjob.dashboard.server import serve

    serve(
        executor, sweeps=sweep_executor, host=host, port=port, open_browser=open_browser, say=_say
    )


def _say(line: str) -> None:
    typer.echo(line, err=True)
