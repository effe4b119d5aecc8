"""The SQLite job store: schema version, one row per name, supervisor writes, concurrent writers."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.e2e import local_jobs as L
from trainjob.errors import AlreadyExistsError, ConfigError
from trainjob.local import LocalExecutor
from trainjob.local.state import status
from trainjob.local.state.store import (
    SCHEMA_VERSION,
    EventRow,
    JobRow,
    PodRow,
    Store,
    StoreFullError,
)


def _row(name: str = "j", uid: str = "u1", phase: str = "Running", ts: float = 0.0) -> JobRow:
    tj = L.trainjob(name, "pass").to_dict()
    tj["metadata"].update(namespace="default", uid=uid, creationTimestamp="2026-01-01T00:00:00Z")
    return JobRow(
        "default", name, uid, "2026-01-01T00:00:00Z", ts, json.dumps(tj), "{}", "[]", "/", phase
    )


def test_a_new_store_records_its_schema_version(tmp_path: Path) -> None:
    Store(tmp_path / "db")
    got = sqlite3.connect(tmp_path / "db").execute("SELECT value FROM meta").fetchone()
    assert got == (str(SCHEMA_VERSION),)


def test_a_store_from_a_newer_trainjob_is_refused(tmp_path: Path) -> None:
    Store(tmp_path / "db")
    db = sqlite3.connect(tmp_path / "db")
    db.execute("UPDATE meta SET value = '99'")
    db.commit()
    with pytest.raises(ConfigError, match="schema version 99, newer than this trainjob's"):
        Store(tmp_path / "db")


def test_a_new_home_and_its_store_are_private_to_their_user(tmp_path: Path) -> None:
    store = Store(tmp_path / "home" / "trainjob.db")
    store.insert_job(_row())
    assert (tmp_path / "home").stat().st_mode & 0o777 == 0o700
    for name in ("trainjob.db", "trainjob.db-wal", "trainjob.db-shm"):
        assert (tmp_path / "home" / name).stat().st_mode & 0o777 == 0o600, name


def test_the_store_uses_wal_so_readers_never_wait_for_the_supervisor(tmp_path: Path) -> None:
    Store(tmp_path / "db")
    assert sqlite3.connect(tmp_path / "db").execute("PRAGMA journal_mode").fetchone() == ("wal",)


def test_a_name_is_taken_until_the_job_is_deleted(tmp_path: Path) -> None:
    store = Store(tmp_path / "db")
    store.insert_job(_row())
    with pytest.raises(AlreadyExistsError, match='"j" already exists'):
        store.insert_job(_row(uid="u2"))
    store.delete_job("default", "j", "u1")
    store.insert_job(_row(uid="u2"))
    assert store.job("default", "j").uid == "u2"  # type: ignore[union-attr]


def test_a_supervisor_write_never_touches_a_recreated_or_finished_job(tmp_path: Path) -> None:
    store = Store(tmp_path / "db")
    store.insert_job(_row(uid="new"))
    pod = PodRow("default", "j", "old", "node", 0, 0, "p", "Running")
    ev = EventRow("default", "j", "old", "Normal", "R", "m", "t", "TrainJob", "j")
    assert not store.write_status("default", "j", "old", pods=[pod], events=[ev], phase="Complete")
    assert store.job("default", "j").phase == "Running"  # type: ignore[union-attr]
    assert store.pods("default", "j") == [] and store.events("default", "j") == []
    assert store.update_job("default", "j", "new", phase="Failed")
    assert not store.write_status("default", "j", "new", pods=[], events=[], phase="Complete")
    assert store.job("default", "j").phase == "Failed"  # type: ignore[union-attr]


def test_a_full_store_is_a_one_line_error_and_the_store_stays_usable(tmp_path: Path) -> None:
    # SQLite's max_page_count gives the SQLITE_FULL a full disk gives, without root or a tmpfs.
    store = Store(tmp_path / "db")
    store.insert_job(_row("small"))
    pages = store._db.execute("PRAGMA page_count").fetchone()[0]
    store._db.execute(f"PRAGMA max_page_count = {pages}")
    big = _row("big", uid="u2")._replace(plan=json.dumps(["x" * 200_000]))
    with pytest.raises(StoreFullError) as err:
        store.insert_job(big)
    message = str(err.value)
    assert message.startswith(
        f"cannot write the job store {tmp_path / 'db'}: database or disk is full"
    )
    assert "set TRAINJOB_HOME to another disk" in message
    # The failed write was rolled back: the connection takes the next transaction.
    assert store.job("default", "big") is None
    assert store.update_job("default", "small", "u1", phase="Failed")
    store._db.execute(f"PRAGMA max_page_count = {pages * 1000}")
    store.insert_job(big)
    assert store.job("default", "big") is not None


def test_concurrent_writers_in_other_processes_all_land(tmp_path: Path) -> None:
    Store(tmp_path / "db")
    code = (
        "import sys; from pathlib import Path; from trainjob.local.state.store import Store, EventRow\n"
        "s = Store(Path(sys.argv[1]))\n"
        "for i in range(100):\n"
        "    s.add_event(EventRow('default', 'j', 'u', 'Normal', 'W' + sys.argv[2], str(i), 't', 'TrainJob', 'j'))\n"
    )
    workers = [
        subprocess.Popen([sys.executable, "-c", code, str(tmp_path / "db"), str(n)])
        for n in range(4)
    ]
    assert [w.wait(timeout=120) for w in workers] == [0, 0, 0, 0]
    events = Store(tmp_path / "db").events("default", "j")
    assert len(events) == 400
    assert {e.reason for e in events} == {"W0", "W1", "W2", "W3"}


def test_listing_a_thousand_jobs_is_one_query(tmp_path: Path) -> None:
    # How fast: benchmarks/sdk.py (list_jobs of 1,000 jobs beside a raw store read).
    ex = LocalExecutor(tmp_path)
    done = {"conditions": [], "jobsStatus": [{"name": "node", "succeeded": 1}]}
    status.complete(done, "2026-01-01T00:00:00Z")
    for i in range(1000):
        row = _row(f"job-{i}", str(i), "Complete", float(i))
        ex.store.insert_job(row._replace(status=json.dumps(done)))
    statements: list[str] = []
    ex.store._db.set_trace_callback(statements.append)
    jobs = ex.states(pods=False)
    ex.store._db.set_trace_callback(None)
    assert len(statements) == 1 and statements[0].startswith("SELECT")
    assert len(jobs) == 1000 and jobs[999].name == "job-999"
    assert jobs[0].trainjob["status"]["conditions"][0]["type"] == "Complete"


def test_a_job_whose_supervisor_never_started_fails_after_a_grace_period(tmp_path: Path) -> None:
    # The client died between storing the job and starting its supervisor (no pid recorded).
    ex = LocalExecutor(tmp_path)
    ex.store.insert_job(_row("fresh", "u1", "Created")._replace(created_ts=time.time()))
    ex.store.insert_job(_row("stale", "u2", "Created")._replace(created_ts=time.time() - 120))
    assert ex.state("fresh").phase == "Created"
    s = ex.state("stale")
    assert (s.phase, s.reason) == ("Failed", "SupervisorDied")
    assert s.message.startswith("the local supervisor never started")
    assert ex.store.job("default", "stale").phase == "Failed"  # type: ignore[union-attr]


def test_a_store_from_schema_version_1_is_upgraded_in_place_and_keeps_its_pods(
    tmp_path: Path,
) -> None:
    """A TRAINJOB_HOME written before pods had a ``ready`` column (schema 1) still opens: the
    column is added, its rows read back not ready, and the version is bumped."""
    db = sqlite3.connect(tmp_path / "db")
    db.executescript(
        """
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        INSERT INTO meta VALUES ('schema_version', '1');
        CREATE TABLE pods (
          namespace TEXT NOT NULL, name TEXT NOT NULL, uid TEXT NOT NULL, job TEXT NOT NULL,
          job_index INTEGER NOT NULL, idx INTEGER NOT NULL, pod_name TEXT NOT NULL,
          phase TEXT NOT NULL, exit_code INTEGER, started TEXT, finished TEXT,
          restarts INTEGER NOT NULL DEFAULT 0, pid INTEGER, pid_start TEXT,
          message TEXT NOT NULL DEFAULT '',
          PRIMARY KEY (namespace, name, job, job_index, idx)
        );
        INSERT INTO pods (namespace, name, uid, job, job_index, idx, pod_name, phase)
          VALUES ('default', 'old', 'u0', 'node', 0, 0, 'old-node-0-0-abcde', 'Succeeded');
        """
    )
    db.commit()
    db.close()
    store = Store(tmp_path / "db")
    (pod,) = store.pods("default", "old")
    assert (pod.pod_name, pod.phase, pod.ready) == ("old-node-0-0-abcde", "Succeeded", False)
    got = sqlite3.connect(tmp_path / "db").execute("SELECT value FROM meta").fetchone()
    assert got == (str(SCHEMA_VERSION),) and SCHEMA_VERSION >= 2
    store.put_pods([pod._replace(phase="Running", ready=True)])
    assert store.pods("default", "old")[0].ready is True


def test_a_store_from_schema_version_2_gets_the_runner_column_and_its_jobs_run_as_processes(
    tmp_path: Path,
) -> None:
    """Jobs stored before the container backend (schema 2) read back as process jobs."""
    db = sqlite3.connect(tmp_path / "db")
    Store(tmp_path / "db").insert_job(_row("old", "u0", "Complete"))
    db.execute("ALTER TABLE jobs DROP COLUMN runner")
    db.execute("UPDATE meta SET value = '2' WHERE key = 'schema_version'")
    db.commit()
    db.close()
    store = Store(tmp_path / "db")
    job = store.job("default", "old")
    assert job is not None and job.runner == ""
    assert store.update_job("default", "old", "u0", runner='{"container": {}}')
    assert store.job("default", "old").runner == '{"container": {}}'  # type: ignore[union-attr]
    got = sqlite3.connect(tmp_path / "db").execute("SELECT value FROM meta").fetchone()
    assert got == (str(SCHEMA_VERSION),)


def _finished_row(name: str, uid: str, ttl: int | None = None) -> JobRow:
    """A Complete 3-node job with a progress report, whose runtime's runPolicy has ``ttl``."""
    row = _row(name, uid, "Complete", ts=time.time())
    tj = json.loads(row.trainjob)
    tj["spec"]["trainer"]["numNodes"] = 3
    status = {
        "conditions": [
            {"type": "Complete", "status": "True", "lastTransitionTime": "2026-01-01T00:01:00Z"}
        ],
        "trainerStatus": {
            "lastUpdatedTime": "2026-01-01T00:00:59Z",
            "progressPercentage": 100,
            "estimatedRemainingSeconds": 0,
            "metrics": [{"name": "loss", "value": "0.25"}, {"name": "lr", "value": "1e-4"}],
        },
    }
    runtime = {"spec": {"runPolicy": {"ttlSecondsAfterFinished": ttl}}} if ttl else {}
    return row._replace(
        trainjob=json.dumps(tj), status=json.dumps(status), runtime=json.dumps(runtime)
    )


def test_the_listing_columns_follow_every_write_of_the_trainjob_and_its_status(
    tmp_path: Path,
) -> None:
    """A listing reads the runtime's name, nodes, TTLs, finish time and latest report from
    columns kept on insert, update and the supervisor's write: each write of the JSON keeps
    them in step, so the listing parses no TrainJob (``LocalExecutor.states``)."""
    store = Store(tmp_path / "db")
    store.insert_job(_finished_row("a", "u1", ttl=600))
    (r,) = store.listing()
    cols = dict(
        zip(
            ("runtime_ref", "num_nodes", "job_ttl", "runtime_ttl", "finished_at"),
            r[10:15],
            strict=True,
        )
    )
    assert cols == {
        "runtime_ref": "plain",
        "num_nodes": 3,
        "job_ttl": None,
        "runtime_ttl": 600,
        "finished_at": 1767225660.0,
    }
    assert r[15:19] == ("2026-01-01T00:00:59Z", 100, 0, '{"loss":"0.25","lr":"1e-4"}')
    assert r[-1] == 1  # whole JSON
    tj = json.loads(r[19])
    tj["spec"]["ttlSecondsAfterFinished"] = 5
    tj["spec"]["trainer"]["numNodes"] = 1
    assert store.update_job("default", "a", "u1", trainjob=json.dumps(tj))
    assert store.listing()[0][11:13] == (1, 5)
    assert store.update_job("default", "a", "u1", status="{}")
    assert store.listing()[0][14:19] == (None, "", None, None, "{}")
    with sqlite3.connect(tmp_path / "db") as raw:  # a hand edit: SQLite's trigger sees it
        raw.execute("UPDATE jobs SET status = '[1]' WHERE name = 'a'")
    assert store.listing()[0][-1] == 0
    assert store.update_job("default", "a", "u1", status="{}")
    assert store.listing()[0][-1] == 1
    store.insert_job(_row("b", "u2", "Running", ts=time.time() + 1))
    report = {"trainerStatus": {"lastUpdatedTime": "t", "progressPercentage": 40, "metrics": []}}
    assert store.write_status("default", "b", "u2", pods=[], events=[], status=json.dumps(report))
    assert store.listing()[1][15:19] == ("t", 40, None, "{}")


def test_a_store_from_schema_version_3_gets_the_listing_columns_from_its_jobs_json(
    tmp_path: Path,
) -> None:
    """Jobs stored before the listing's columns (schema 3) are listed as before, the columns
    filled in from each job's JSON once, on upgrade."""
    from trainjob.local.state import rows

    store = Store(tmp_path / "trainjob.db")
    store.insert_job(_finished_row("old", "u0", ttl=None))
    store.insert_job(_finished_row("broken", "u1", ttl=None))
    store.close()
    db = sqlite3.connect(tmp_path / "trainjob.db")
    db.execute("DROP TRIGGER jobs_whole_insert")
    db.execute("DROP TRIGGER jobs_whole_update")
    db.execute("UPDATE jobs SET trainjob = '{not json' WHERE name = 'broken'")
    for col in (*rows.DERIVED_COLS, "whole"):
        db.execute(f"ALTER TABLE jobs DROP COLUMN {col}")
    db.execute("UPDATE meta SET value = '3' WHERE key = 'schema_version'")
    db.commit()
    db.close()
    (s,) = LocalExecutor(tmp_path).states(pods=False)  # the damaged one skipped, and said
    assert (s.name, s.runtime_name, s.num_nodes) == ("old", "plain", 3)
    assert s.progress is not None and s.progress.loss == "0.25"
    assert s.progress.progress_percentage == 100 and dict(s.progress.metrics)["lr"] == "1e-4"
    assert s.trainjob["spec"]["trainer"]["numNodes"] == 3  # the whole object, read on use
    assert "command" not in s.trainjob["spec"]["trainer"]
    got = sqlite3.connect(tmp_path / "trainjob.db").execute("SELECT value FROM meta").fetchone()
    assert got == (str(SCHEMA_VERSION),) and SCHEMA_VERSION >= 4
