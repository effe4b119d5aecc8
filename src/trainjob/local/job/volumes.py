"""Pod volumes as directories under the job's home: Secret and ConfigMap files written out.

An ``emptyDir``, a PVC or a volume claim template is an empty directory shared by every pod of the
job that mounts it (so an initializer's ``/workspace`` is the trainer's); a Secret or ConfigMap
volume gets its keys as files, with the owner's bits of their modes only (a Secret's ``0640``
would show the MPI key to this machine's other users, who are not the pod's group). Nothing is
written through a link (:mod:`trainjob.local.state.files`). Used by the supervisor before a pod starts.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from trainjob.local.job import pods
from trainjob.local.state import files
from trainjob.runtime.plan import Plan


def materialize(
    pod: pods.PodTemplate, plan: Plan, root: Path, kept: Mapping[str, Path] | None = None
) -> None:
    """Create the directories (and files) of ``pod``'s volumes: under ``root``, or where
    ``kept`` puts them (the job's outputs)."""
    dirs = pods.volume_dirs(pod, root, kept)
    by_name = {v["name"]: v for v in pod.spec.get("volumes") or ()}
    for name, path in dirs.items():
        volume = by_name.get(name) or {}
        if "hostPath" in volume:
            continue
        # below the job's directory, or the home's for a kept one (outputs/, claims/)
        base = Path(os.path.commonpath([root.parent, path]))
        files.private_dirs(base, path)
        for rel, (content, mode) in pods.volume_files(volume, plan).items():
            target = path / rel
            files.private_dirs(base, target.parent)
            files.write_private(target, content, mode)
