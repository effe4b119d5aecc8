"""Workspace snapshots on this machine: one read-only copy per digest, shared, collected.

A submit with a snapshot (``trainjob run --workdir``, the SDK's ``Workspace`` option) unpacks
it once into ``$TRAINJOB_HOME/workspaces/<hex digest>`` (:func:`stage`: into a temporary
directory, made read-only — files 0444 or 0555, directories 0555: a container of the container
backend may run as its image's user; the home above it stays 0700, so no other user of this
machine reaches it — then renamed into place, so a copy is whole or absent); a second job with the same content finds it there. Editing the folder
after submit changes nothing a job runs: the job runs the copy, not the folder.

The compiled Plan asks for what a cluster does (an init container unpacking a ConfigMap into an
``emptyDir``, :mod:`trainjob.runtime.plugins.workspace`); :func:`adapt` makes it this machine's:
the workspace volume becomes a ``hostPath`` on the copy (the process backend rewrites
``/trainjob/workspace`` in env, command and working directory to it; the container backend
mounts it read-only there), and the init container and the archive's volume go. A TrainJob whose
annotation names a digest with no copy here (a rerun of a stored manifest, its copy collected)
is refused before anything starts, with the fix.

:func:`collect` removes the copies no stored job names (called after a delete, and at each
stage); a copy younger than :data:`GRACE` seconds stays, as a submit in flight may have just
staged it. Used by ``local/client/``: ``executor.py``, ``admission.py`` and ``deletion.py``.
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
import time
from pathlib import Path
from typing import Any

from trainjob.errors import ConfigError
from trainjob.local.state import files
from trainjob.local.state.store import Store
from trainjob.runtime.plan import Plan
from trainjob.workspace import names, unpack
from trainjob.workspace.pack import Snapshot

GRACE = 300.0
"""Seconds a copy no job names yet is kept (a submit that staged it may not have stored its job)."""


def root(home: Path) -> Path:
    return home / "workspaces"


def copy_of(home: Path, digest: str) -> Path:
    """The directory of the snapshot ``digest``'s copy (which may not exist)."""
    return root(home) / names.hexdigest(digest)


def _read_only(path: Path) -> None:
    """Every file and directory under ``path`` (and itself) read-only for all (see above)."""
    for dirpath, dirnames, filenames in os.walk(path, topdown=False):
        for name in filenames:
            p = os.path.join(dirpath, name)
            mode = os.lstat(p).st_mode
            os.chmod(p, 0o555 if mode & 0o100 else 0o444)
        for name in dirnames:
            os.chmod(os.path.join(dirpath, name), 0o555)
    os.chmod(path, 0o555)


def _writable(path: Path) -> None:
    """Undo :func:`_read_only` so the tree can be removed (never through a link)."""
    with contextlib.suppress(OSError):
        os.chmod(path, 0o700)
    for dirpath, dirnames, _ in os.walk(path):
        for name in dirnames:
            p = os.path.join(dirpath, name)
            if not os.path.islink(p):
                with contextlib.suppress(OSError):
                    os.chmod(p, 0o700)


def stage(home: Path, snapshot: Snapshot, store: Store | None = None) -> Path:
    """The read-only copy of ``snapshot`` under ``home``, unpacked now unless one exists (the
    copies ``store``'s jobs no longer name are collected meanwhile)."""
    files.ensure_home(home)
    files.private_dirs(home, root(home))
    dest = copy_of(home, snapshot.digest)
    if dest.is_dir() and not dest.is_symlink():
        os.utime(dest)  # fresh again for collect's grace
        return dest
    tmp = root(home) / f".tmp-{names.hexdigest(snapshot.digest)[:12]}-{os.getpid()}"
    if tmp.exists():
        _writable(tmp)
        files.remove_tree(home, tmp)
    unpack.extract(snapshot.archive, tmp, snapshot.digest)
    _read_only(tmp)
    try:
        os.rename(tmp, dest)
    except OSError:  # another submit staged the same digest meanwhile: theirs is the same
        _writable(tmp)
        files.remove_tree(home, tmp)
        if not dest.is_dir():
            raise
    if store is not None:
        collect(home, store)
    return dest


def digest_of(trainjob: dict[str, Any]) -> str | None:
    ann = (trainjob.get("metadata") or {}).get("annotations") or {}
    value = ann.get(names.DIGEST)
    return str(value) if value else None


def in_use(store: Store | None) -> set[str]:
    """The hex digests the stored jobs name: TrainJobs, and the trial template of every stored
    OptimizationJob (``run --workdir`` of a sweep: its trials to come use the copy too)."""
    used: set[str] = set()
    if store is None:
        return used
    docs: list[str] = [row.trainjob for row in store.jobs(light=True)]
    from trainjob.local.client import sweep_store

    templates = []
    for row in sweep_store.listed(store):
        try:
            spec = json.loads(row.job).get("spec") or {}
        except (ValueError, TypeError, AttributeError):
            continue
        templates.append(spec.get("trainJobTemplate") or {})
    for doc in [*docs, *templates]:
        try:
            digest = digest_of(json.loads(doc) if isinstance(doc, str) else doc)
        except (ValueError, TypeError, AttributeError):
            continue
        if digest and names.DIGEST_RE.match(digest):
            used.add(names.hexdigest(digest))
    return used


def release(home: Path, store: Store, trainjob: dict[str, Any]) -> list[str]:
    """After ``trainjob`` was deleted: its copy goes now when no other job names it, and any
    other copy no job names past its grace; the names removed."""
    digest = digest_of(trainjob)
    now = [names.hexdigest(digest)] if digest and names.DIGEST_RE.match(digest) else []
    return collect(home, store, now=now)


def collect(
    home: Path, store: Store | None, *, grace: float = GRACE, now: list[str] | None = None
) -> list[str]:
    """Remove the copies no stored job names (older than ``grace`` seconds, or any age when
    listed in ``now``); their names."""
    base = root(home)
    try:
        entries = list(os.scandir(base))
    except OSError:
        return []
    used = in_use(store)
    clock = time.time()
    removed: list[str] = []
    for d in entries:
        if d.name in used or d.is_symlink() or not d.is_dir(follow_symlinks=False):
            continue
        try:
            age = clock - d.stat(follow_symlinks=False).st_mtime
        except OSError:
            continue
        if age < grace and d.name not in (now or ()):
            continue
        path = Path(d.path)
        _writable(path)
        try:
            files.remove_tree(home, path)
        except files.UnsafePathError:
            continue
        removed.append(d.name)
    return removed


def adapt(plan: Plan, home: Path, trainjob: dict[str, Any]) -> Plan:
    """The Plan with its workspace volume on this machine's copy (see the module docstring);
    ``plan`` itself when the TrainJob has no snapshot. ConfigError when the copy is missing."""
    digest = digest_of(trainjob)
    if not digest:
        return plan
    where = copy_of(home, digest)
    if not where.is_dir():
        source = ((trainjob.get("metadata") or {}).get("annotations") or {}).get(names.SOURCE)
        raise ConfigError(
            f"metadata.annotations[{names.DIGEST}]: the workspace snapshot {digest}"
            + (f" (of {source})" if source else "")
            + " is not on this machine (it is kept while a job uses it): submit again with "
            "--workdir DIR"
        )
    objects = copy.deepcopy(list(plan.objects))
    for obj in objects:
        if obj.get("kind") != "JobSet":
            continue
        for rjob in (obj.get("spec") or {}).get("replicatedJobs") or ():
            spec = (((rjob.get("template") or {}).get("spec") or {}).get("template") or {}).get(
                "spec"
            ) or {}
            _adapt_pod(spec, where)
    return Plan(tuple(objects))


def _adapt_pod(spec: dict[str, Any], where: Path) -> None:
    volumes = spec.get("volumes") or []
    if not any(v.get("name") == names.VOLUME for v in volumes):
        return
    spec["volumes"] = [
        {"name": names.VOLUME, "hostPath": {"path": str(where), "type": "Directory"}}
        if v.get("name") == names.VOLUME
        else v
        for v in volumes
        if v.get("name") != names.ARCHIVE_VOLUME
    ]
    inits = [i for i in spec.get("initContainers") or () if i.get("name") != names.INIT_CONTAINER]
    if inits:
        spec["initContainers"] = inits
    else:
        spec.pop("initContainers", None)
    for ctr in [*(spec.get("initContainers") or ()), *(spec.get("containers") or ())]:
        mounts = [m for m in ctr.get("volumeMounts") or () if m.get("name") != names.ARCHIVE_VOLUME]
        ctr["volumeMounts"] = mounts
