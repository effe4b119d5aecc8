"""``trainjob run --workdir DIR``: pack the folder once and record it on every TrainJob of the run
(and on the trial template of every OptimizationJob of it).

The snapshot (:mod:`trainjob.workspace.pack`) is made before anything is submitted, so a folder
that is missing, too large or holds a link out of it is refused first, in one line; each TrainJob
gets the snapshot's annotations (digest, source, and with ``--workdir-uri`` the ``s3://`` object
the cluster backend puts it at), and the executor stores it where its pods find it
(``Executor.submit(..., workspace=)``). Called by ``cli/run.py``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from trainjob.api.optimization import OptimizationJob
    from trainjob.api.trainer import TrainJob
    from trainjob.workspace.pack import Snapshot


def pack(
    folder: str,
    exclude: Sequence[str],
    uri: str | None,
    trainjobs: Sequence[TrainJob],
    sweeps: Sequence[OptimizationJob] = (),
) -> Snapshot:
    """The snapshot of ``folder``, its annotations set on each of ``trainjobs`` and on the trial
    template of each of ``sweeps`` (so that every trial carries them)."""
    from trainjob.api.k8s_types import ObjectMeta
    from trainjob.api.optimization import TrainJobTemplateSpec
    from trainjob.workspace import pack as packing
    from trainjob.workspace import s3

    snapshot = packing.pack(folder, exclude)
    where = s3.object_uri(uri, snapshot.digest) if uri else None
    for tj in trainjobs:
        tj.metadata.annotations = {
            **(tj.metadata.annotations or {}),
            **snapshot.annotations(where),
        }
    for job in sweeps:
        template: TrainJobTemplateSpec = job.spec.train_job_template
        meta = template.metadata or ObjectMeta()
        meta.annotations = {**(meta.annotations or {}), **snapshot.annotations(where)}
        template.metadata = meta
    return snapshot
