"""``trainjob crds``: the trainer.kubeflow.org CRDs this trainjob speaks, from the installed package.

    trainjob crds | kubectl apply --server-side -f -     # install or upgrade the CRDs
    trainjob crds --out DIR                              # one file per CRD, as manifests/crds

The YAML is the wheel's copy of ``manifests/crds`` (``trainjob/_manifests/crds``), so a cluster
gets exactly the CRDs of the installed version without the repository (Helm does not upgrade the
CRDs of a chart: apply these before ``helm upgrade``). Registered on :data:`trainjob.cli.root.app`;
imports nothing heavy.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from trainjob.cli.root import app
from trainjob.errors import TrainJobError


def crds_dir() -> Path:
    """The packaged CRDs (in the wheel), else the source tree's ``manifests/crds``."""
    here = Path(__file__).resolve().parent.parent
    packaged = here / "_manifests" / "crds"
    if packaged.is_dir():
        return packaged
    return here.parent.parent / "manifests" / "crds"


def crd_files() -> list[Path]:
    files = sorted(crds_dir().glob("*.yaml"))
    if not files:
        raise TrainJobError(f"no CRD files in {crds_dir()}: the installation is incomplete")
    return files


@app.command("crds")
def crds_command(
    out: Annotated[
        Path | None,
        typer.Option("--out", help="Write one file per CRD into this directory instead."),
    ] = None,
) -> None:
    """Print the TrainJob, TrainingRuntime and ClusterTrainingRuntime CRDs (YAML)."""
    files = crd_files()
    if out is None:
        sys.stdout.write("".join(f.read_text() for f in files))  # each file starts a document
        return
    try:
        out.mkdir(parents=True, exist_ok=True)
        for f in files:
            (out / f.name).write_text(f.read_text())
            typer.echo(f"wrote {out / f.name}")
    except OSError as e:
        raise TrainJobError(f"cannot write {e.filename or out}: {e.strerror}") from None
