"""A broken job store is one line saying what is wrong and what to do, never a traceback, and a bad
row hides nothing else (issue 11, class 6): a read-only home (reads work, writes say so), a
truncated or garbled file, a lock another process holds, a damaged row, a home that is a file or
under /proc."""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e import local_jobs as L
from tests.redteam.cases import cli
from trainjob.local import LocalExecutor
from trainjob.local.state.store import Store

ROOT = Path(__file__).resolve().parents[3]


def _job(home: Path, name: str = "one") -> None:
    """A finished job in ``home``'s store (stored directly: no process needed)."""
    ex = LocalExecutor(home)
    ex.apply_runtime(L.runtime())
    ex.store.insert_job(
        __import__("trainjob.local.state.store", fromlist=["JobRow"]).JobRow(
            namespace="default", name=name, uid=f"uid-{name}", created="2026-01-01T00:00:00Z",
            created_ts=1.0, trainjob=L.trainjob(name, "print(1)").model_dump_json(by_alias=True),
            runtime="{}", plan="[]", cwd="/", phase="Complete",
        )
    )  # fmt: skip
    ex.store.close()  # checkpointed into the file now, not when the garbage collector runs


def test_a_home_that_is_a_file_is_one_line(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.write_text("not a directory")
    res = cli(["get", "jobs"], home)
    assert (res.code, res.err) == (
        1,
        f"error: TRAINJOB_HOME {home} is a file, not a directory: move it away, or set "
        "TRAINJOB_HOME to a directory\n",
    )


def test_a_home_under_a_file_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    home = tmp_path / "file" / "home"
    res = cli(["get", "jobs"], home)
    assert (res.code, res.err) == (
        1,
        f"error: TRAINJOB_HOME {home} is not a directory (a part of the path is a file); set "
        "TRAINJOB_HOME to a directory\n",
    )


def test_a_home_under_proc_is_one_line() -> None:
    home = Path("/proc/trainjob-home")
    res = cli(["get", "jobs"], home)
    assert res.code == 1 and res.err.startswith(f"error: cannot create TRAINJOB_HOME {home}: ")
    assert res.err.endswith("; set TRAINJOB_HOME to a directory you can write\n")
    assert res.err.count("\n") == 1


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(lambda db: db.write_bytes(db.read_bytes()[:1500]), id="truncated"),
        pytest.param(lambda db: db.write_bytes(b"garbage" * 1000), id="garbled"),
        pytest.param(
            lambda db: db.write_bytes(db.read_bytes()[:100] + b"\xff" * 4000),
            id="pages overwritten",
        ),
    ],
)
def test_a_damaged_store_is_one_line_saying_how_to_start_afresh(tmp_path: Path, damage) -> None:  # type: ignore[no-untyped-def]
    home = tmp_path / "home"
    _job(home)
    db = home / "trainjob.db"
    for suffix in ("-wal", "-shm"):
        with contextlib.suppress(FileNotFoundError):
            (home / f"trainjob.db{suffix}").unlink()
    damage(db)
    res = cli(["get", "jobs"], home)
    assert res.code == 1 and "Traceback" not in res.err, res.err
    assert res.err.startswith(f"error: the job store {db} is damaged (")
    assert res.err.endswith(
        f"): move it aside (mv {db} {db}.damaged) and trainjob starts an empty one; the jobs it "
        "held are not in the new one\n"
    )


def test_a_bad_row_is_reported_and_skipped_never_hiding_the_others(tmp_path: Path) -> None:
    home = tmp_path / "home"
    for name in ("first", "broken", "last"):
        _job(home, name)
    with sqlite3.connect(home / "trainjob.db") as con:
        con.execute("UPDATE jobs SET trainjob = '{not json' WHERE name = 'broken'")
    res = _trainjob([], home, "get", "jobs")
    assert res.returncode == 0, res.stderr
    assert [r.split()[0] for r in res.stdout.splitlines()] == ["NAME", "first", "last"]
    assert res.stderr == (
        f"warning: skipping TrainJob default/broken in the job store {home / 'trainjob.db'} is "
        "unreadable (JSONDecodeError: Expecting property name enclosed in double quotes: line 1 "
        "column 2 (char 1)): remove it with trainjob delete broken -n default\n"
    )
    got = cli(["get", "jobs", "broken"], home)
    assert got.code == 1 and got.err.startswith("error: TrainJob default/broken in the job store")
    assert cli(["delete", "broken"], home).code == 0
    assert _trainjob([], home, "get", "jobs").stderr == ""


def test_a_held_lock_lets_reads_through_and_fails_a_write_in_one_line(tmp_path: Path) -> None:
    home = tmp_path / "home"
    _job(home)
    holder = sqlite3.connect(home / "trainjob.db", isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # a write lock held, as a long sqlite3 session would
    try:
        res = cli(["get", "jobs"], home)
        assert (res.code, res.out.splitlines()[1].split()[0]) == (0, "one"), res.err
        store = Store(home / "trainjob.db", busy_timeout=0.5)
        with pytest.raises(Exception) as err:
            store.update_job("default", "one", "uid-one", phase="Failed")
        assert type(err.value).__name__ == "StoreBusyError"
        assert str(err.value) == (
            f"the job store {home / 'trainjob.db'} is locked by another process and stayed "
            "locked for 0 s (database is locked): wait for it (a long sqlite3 session on the "
            "file?) and try again"
        )
    finally:
        holder.execute("ROLLBACK")
        holder.close()


@contextlib.contextmanager
def _read_only(path: Path) -> Iterator[list[str]]:
    """A command prefix that sees ``path`` read-only: as root a read-only bind mount in a mount
    namespace of its own (root ignores file modes), else mode 0555."""
    if os.geteuid() != 0:
        path.chmod(0o555)
        try:
            yield []
        finally:
            path.chmod(0o700)
        return
    probe = subprocess.run(
        ["unshare", "-m", "sh", "-c", f"mount --bind -o ro {path} {path}"], capture_output=True
    )
    if probe.returncode != 0 or not shutil.which("unshare"):
        pytest.skip(f"cannot make a read-only mount here: {probe.stderr.decode().strip()}")
    yield ["unshare", "-m", "sh", "-c", f'mount --bind -o ro "{path}" "{path}" && exec "$@"', "sh"]


def _trainjob(prefix: list[str], home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TRAINJOB_HOME": str(home), "PYTHONPATH": str(ROOT / "src")}
    env.pop("TRAINJOB_BACKEND", None)
    return subprocess.run(
        [*prefix, sys.executable, "-m", "trainjob", *args],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def test_a_read_only_home_reads_and_refuses_writes_in_one_line(tmp_path: Path) -> None:
    home = tmp_path / "home"
    _job(home)
    job = tmp_path / "job.yaml"
    job.write_text(
        L.trainjob("two", "print(1)", runtime="torch-distributed").model_dump_json(by_alias=True)
    )
    with _read_only(home) as prefix:
        listed = _trainjob(prefix, home, "get", "jobs")
        assert listed.returncode == 0 and listed.stdout.splitlines()[1].split()[0] == "one", (
            listed.stderr
        )
        assert listed.stderr == ""
        ran = _trainjob(prefix, home, "run", "-f", str(job))
        assert ran.returncode == 1 and "Traceback" not in ran.stderr, ran.stderr
        assert ran.stderr == (
            f"error: cannot write the job store {home / 'trainjob.db'}: its directory is "
            "read-only: reading jobs works, changing them needs a TRAINJOB_HOME you can write\n"
        )
