"""``train(..., options=[Workspace("./src")])``: ship a folder with the job (trainjob's own option).

A CustomTrainer's function travels as source code; with this option the folder travels too, so
the function can ``import`` the folder's modules (the folder is on ``PYTHONPATH`` and the working
directory on every trainer node). The folder is packed when the option is applied
(:mod:`trainjob.workspace.pack`: its ``.gitignore`` and ``exclude`` respected, no symlink out of
it, ``max_size``), so the job runs what the folder held at ``train()``, whatever is edited
afterwards. The TrainJob records the snapshot's digest and folder in annotations; the backend
stores the archive (locally a read-only copy per digest, on a cluster a ConfigMap owned by the
TrainJob or, with ``storage_uri``, an ``s3://`` object) when it submits the job
(:func:`snapshot_in`). A callable like the other options (:mod:`trainjob.client.options`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from trainjob.client.types import AnyTrainer
from trainjob.errors import TrainJobError
from trainjob.workspace.pack import Snapshot


@dataclass
class Workspace:
    """Ship the folder ``path`` with the TrainJob, read-only on every trainer node.

    Args:
        path: The folder (relative to the working directory).
        exclude: More paths to leave out, in ``.gitignore`` syntax (``["data/", "*.ckpt"]``).
        max_size: The most the folder may hold, as bytes or a quantity (``"200Mi"``); default
            ``$TRAINJOB_WORKSPACE_LIMIT``, else 100 MiB.
        storage_uri: An ``s3://bucket/prefix`` to store the archive under (a cluster's
            ConfigMap holds about 1 MiB compressed; larger folders need one).
    """

    path: str
    exclude: list[str] = field(default_factory=list)
    max_size: int | str | None = None
    storage_uri: str | None = None
    snapshot: Snapshot | None = field(default=None, init=False, repr=False, compare=False)
    annotations: dict[str, str] = field(default_factory=dict, init=False, repr=False, compare=False)

    def __call__(self, job_spec: dict[str, Any], trainer: AnyTrainer | None, backend: Any) -> None:
        from trainjob.workspace import pack, s3

        try:
            limit = self.max_size
            if isinstance(limit, str):
                limit = pack.parse_size(limit, "Workspace.max_size")
            self.snapshot = pack.pack(self.path, self.exclude, limit)
            uri = (
                s3.object_uri(self.storage_uri, self.snapshot.digest) if self.storage_uri else None
            )
        except TrainJobError as e:
            raise ValueError(str(e)) from None
        self.annotations = self.snapshot.annotations(uri)
        job_spec.setdefault("metadata", {}).setdefault("annotations", {}).update(self.annotations)


def snapshot_in(job: dict[str, Any], options: Sequence[Any] | None) -> Snapshot | None:
    """The snapshot a :class:`Workspace` among the applied ``options`` packed (the last one),
    its annotations set again on ``job`` (an ``Annotations`` option after it replaces them)."""
    found: Workspace | None = None
    for option in options or ():
        if isinstance(option, Workspace) and option.snapshot is not None:
            found = option
    if found is None:
        return None
    job.setdefault("metadata", {}).setdefault("annotations", {}).update(found.annotations)
    return found.snapshot
