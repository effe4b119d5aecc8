"""The store's ``optimizationjobs`` table (schema 5): added to an older store on open, one row a
sweep, the supervisor's compare-and-set claim and its status writes."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import pytest

from trainjob.errors import AlreadyExistsError
from trainjob.local.client import sweep_store
from trainjob.local.client.sweep_store import SweepRow
from trainjob.local.state.store import SCHEMA_VERSION, Store


def row(name: str = "lr", uid: str = "u-1") -> SweepRow:
    return SweepRow("default", name, uid, "2026-12-04T00:00:00Z", time.time(), "{}", "{}",
                    "Created", "/tmp")  # fmt: skip


def test_a_store_of_schema_4_gets_the_optimizationjobs_table(tmp_path: Path) -> None:
    path = tmp_path / "trainjob.db"
    Store(path).close()
    db = sqlite3.connect(path)
    db.execute("DROP TABLE optimizationjobs")
    db.execute("UPDATE meta SET value = '4' WHERE key = 'schema_version'")
    db.commit()
    db.close()
    store = Store(path)
    sweep_store.insert(store, row())
    assert [r.name for r in sweep_store.listed(store)] == ["lr"]
    assert store.read("SELECT value FROM meta WHERE key = 'schema_version'") == [
        (str(SCHEMA_VERSION),)
    ]


def test_a_sweep_of_that_name_exists_already(tmp_path: Path) -> None:
    store = Store(tmp_path / "trainjob.db")
    sweep_store.insert(store, row())
    with pytest.raises(AlreadyExistsError, match=r'optimizationjobs\.trainer\.kubeflow\.org "lr"'):
        sweep_store.insert(store, row(uid="u-2"))


def test_only_one_client_records_the_supervisor_it_started(tmp_path: Path) -> None:
    store = Store(tmp_path / "trainjob.db")
    sweep_store.insert(store, row())
    old = (("supervisor_pid", None), ("supervisor_start", None))
    assert sweep_store.update(store, "default", "lr", "u-1", expect=old, supervisor_pid=11)
    assert not sweep_store.update(store, "default", "lr", "u-1", expect=old, supervisor_pid=12)
    got = sweep_store.get(store, "default", "lr")
    assert got is not None and got.supervisor_pid == 11


def test_status_writes_keep_events_and_stop_once_deleting_or_recreated(tmp_path: Path) -> None:
    store = Store(tmp_path / "trainjob.db")
    sweep_store.insert(store, row())
    ev = {"type": "Normal", "reason": "TrialCreated", "message": "m"}
    assert sweep_store.write_status(store, "default", "lr", "u-1", {"a": 1}, "Running", [ev])
    assert sweep_store.write_status(store, "default", "lr", "u-1", {"a": 2}, "Running")
    got = sweep_store.get(store, "default", "lr")
    assert got is not None and got.object()["status"] == {"a": 2} and got.event_list() == [ev]
    assert not sweep_store.write_status(store, "default", "lr", "u-2", {}, "Running")
    sweep_store.update(store, "default", "lr", "u-1", deleting=1)
    assert not sweep_store.write_status(store, "default", "lr", "u-1", {"a": 3}, "Running")
