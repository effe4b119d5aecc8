"""A snapshot on this machine: one read-only copy per digest, shared by the jobs that name it,
removed once none does; the Plan's workspace volume becomes that copy."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from tests.unit.helpers import builtin, pod_spec_of, trainjob
from trainjob.errors import ConfigError
from trainjob.local.client import workspaces
from trainjob.local.state.store import JobRow, Store
from trainjob.runtime import compile
from trainjob.workspace import names, pack


def snapshot(tmp_path: Path, text: str = "X = 1\n") -> pack.Snapshot:
    src = tmp_path / "src"
    (src / "mylib").mkdir(parents=True, exist_ok=True)
    (src / "mylib" / "__init__.py").write_text(text)
    return pack.pack(src)


def row(name: str, digest: str | None) -> JobRow:
    meta: dict[str, object] = {"name": name, "namespace": "default"}
    if digest:
        meta["annotations"] = {names.DIGEST: digest}
    return JobRow(
        namespace="default",
        name=name,
        uid=name,
        created="",
        created_ts=0.0,
        trainjob=json.dumps({"metadata": meta}),
        runtime="{}",
        plan="[]",
        cwd="/",
        phase="Created",
        status="{}",
        suspend=0,
        runner="",
    )


def test_a_snapshot_is_unpacked_once_read_only_and_shared(tmp_path: Path) -> None:
    home = tmp_path / "home"
    snap = snapshot(tmp_path)
    where = workspaces.stage(home, snap)
    assert where == home / "workspaces" / names.hexdigest(snap.digest)
    assert (where / "mylib" / "__init__.py").read_text() == "X = 1\n"
    assert not stat.S_IMODE(os.stat(where / "mylib" / "__init__.py").st_mode) & 0o222
    assert not stat.S_IMODE(os.stat(where / "mylib").st_mode) & 0o222
    inode = os.stat(where / "mylib" / "__init__.py").st_ino
    assert workspaces.stage(home, snap) == where  # the second job's: the same copy
    assert os.stat(where / "mylib" / "__init__.py").st_ino == inode
    assert sorted(os.listdir(home / "workspaces")) == [names.hexdigest(snap.digest)]


def test_a_copy_goes_when_the_last_job_naming_it_is_deleted(tmp_path: Path) -> None:
    home = tmp_path / "home"
    store = Store(home / "jobs.db")
    snap = snapshot(tmp_path)
    where = workspaces.stage(home, snap, store)
    store.insert_job(row("a", snap.digest))
    store.insert_job(row("b", snap.digest))
    store.delete_job("default", "a", "a")
    assert workspaces.release(home, store, json.loads(row("a", snap.digest).trainjob)) == []
    assert where.is_dir()  # b still runs it
    store.delete_job("default", "b", "b")
    assert workspaces.release(home, store, json.loads(row("b", snap.digest).trainjob)) == [
        names.hexdigest(snap.digest)
    ]
    assert not where.exists()


def test_an_unnamed_copy_is_kept_through_its_grace_for_a_submit_in_flight(tmp_path: Path) -> None:
    home = tmp_path / "home"
    store = Store(home / "jobs.db")
    where = workspaces.stage(home, snapshot(tmp_path), store)
    assert workspaces.collect(home, store) == [] and where.is_dir()
    assert workspaces.collect(home, store, grace=0) == [where.name] and not where.exists()


def test_the_plan_runs_the_copy_with_no_init_container_or_configmap(tmp_path: Path) -> None:
    home = tmp_path / "home"
    snap = snapshot(tmp_path)
    where = workspaces.stage(home, snap)
    tj = trainjob(trainer={"command": ["python", "train.py"]})
    tj.metadata.annotations = snap.annotations()
    plan = workspaces.adapt(compile(tj, builtin("torch-distributed")), home, tj.to_dict())
    pod = pod_spec_of(plan, "node")
    assert "initContainers" not in pod
    assert {"name": names.VOLUME, "hostPath": {"path": str(where), "type": "Directory"}} in pod[
        "volumes"
    ]
    assert not any(v["name"] == names.ARCHIVE_VOLUME for v in pod["volumes"])


def test_a_job_naming_a_snapshot_that_is_not_here_is_refused_with_the_fix(tmp_path: Path) -> None:
    tj = trainjob()
    tj.metadata.annotations = {names.DIGEST: "sha256:" + "ab" * 32, names.SOURCE: "/src"}
    plan = compile(tj, builtin("torch-distributed"))
    with pytest.raises(ConfigError, match=r"\(of /src\) is not on this machine .*--workdir DIR$"):
        workspaces.adapt(plan, tmp_path / "home", tj.to_dict())
