"""The local store's ``optimizationjobs`` table: each sweep's object, status, events, supervisor.

One row per OptimizationJob (its table in :mod:`trainjob.local.state.schema`, schema 5): the job as
created (metadata and spec), its status as its sweep supervisor last wrote it, its phase (from
the status's conditions, for listings), where its trials' commands run (``cwd``) and how (the
``runner``: processes, or a container backend's settings), the events its supervisor recorded
(a JSON list, the newest :data:`MAX_EVENTS`) and the supervisor's pid and start time (for the
liveness check that starts a new one). Every write is one transaction of the shared
:class:`~trainjob.local.state.store.Store`; a supervisor writes only the rows of its own ``uid``.
Used by :mod:`trainjob.local.client.sweeps` (the client side) and :mod:`trainjob.local.client.sweep_supervisor`.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from typing import Any, NamedTuple

from trainjob.errors import AlreadyExistsError
from trainjob.local.state.store import Store

MAX_EVENTS = 1000

COLS = (
    "namespace", "name", "uid", "created", "created_ts", "job", "status", "phase", "cwd",
    "runner", "deleting", "supervisor_pid", "supervisor_start", "events",
)  # fmt: skip


class SweepRow(NamedTuple):
    namespace: str
    name: str
    uid: str
    created: str
    created_ts: float
    job: str
    status: str
    phase: str
    cwd: str
    runner: str = ""
    deleting: int = 0
    supervisor_pid: int | None = None
    supervisor_start: str | None = None
    events: str = "[]"

    def object(self) -> dict[str, Any]:
        """The OptimizationJob as an object, with its status."""
        obj: dict[str, Any] = json.loads(self.job)
        status = json.loads(self.status or "{}")
        if status:
            obj["status"] = status
        return obj

    def event_list(self) -> list[dict[str, str]]:
        found = json.loads(self.events or "[]")
        return found if isinstance(found, list) else []


def insert(store: Store, row: SweepRow) -> None:
    """Add a job; AlreadyExistsError when one of that namespace/name exists."""
    marks = ", ".join("?" for _ in COLS)
    try:
        with store.transaction() as db:
            db.execute(f"INSERT INTO optimizationjobs ({', '.join(COLS)}) VALUES ({marks})", row)
    except sqlite3.IntegrityError:
        raise AlreadyExistsError(
            f'optimizationjobs.trainer.kubeflow.org "{row.name}" already exists'
        ) from None


def get(store: Store, namespace: str, name: str) -> SweepRow | None:
    rows = store.read(
        f"SELECT {', '.join(COLS)} FROM optimizationjobs WHERE namespace = ? AND name = ?",
        (namespace, name),
    )
    return SweepRow(*rows[0]) if rows else None


def listed(store: Store, namespace: str | None = None) -> list[SweepRow]:
    """Every job (of ``namespace``), oldest first."""
    sql = f"SELECT {', '.join(COLS)} FROM optimizationjobs"
    args: tuple[str, ...] = ()
    if namespace is not None:
        sql += " WHERE namespace = ?"
        args = (namespace,)
    return [SweepRow(*r) for r in store.read(sql + " ORDER BY created_ts, namespace, name", args)]


def update(
    store: Store,
    namespace: str,
    name: str,
    uid: str,
    *,
    expect: Sequence[tuple[str, Any]] = (),
    **values: Any,
) -> bool:
    """Set columns of one job (of this ``uid``; with ``expect``, only while each named column
    still has its value: a compare-and-set); whether a row changed."""
    bad = set(values) - set(COLS)
    if bad:
        raise ValueError(f"unknown optimizationjobs columns: {sorted(bad)}")
    sets = ", ".join(f"{k} = ?" for k in values)
    sql = f"UPDATE optimizationjobs SET {sets} WHERE namespace = ? AND name = ? AND uid = ?"
    args: list[Any] = [*values.values(), namespace, name, uid]
    for col, value in expect:
        sql += f" AND {col} IS ?"
        args.append(value)
    with store.transaction() as db:
        return db.execute(sql, args).rowcount > 0


def write_status(
    store: Store,
    namespace: str,
    name: str,
    uid: str,
    status: dict[str, Any],
    phase: str,
    events: Sequence[dict[str, str]] = (),
) -> bool:
    """A supervisor's write: the status, its phase and new events, in one transaction;
    nothing (False) when the job is gone, re-created or being deleted."""
    with store.transaction() as db:
        rows = db.execute(
            "SELECT events FROM optimizationjobs WHERE namespace = ? AND name = ? AND uid = ? "
            "AND deleting = 0",
            (namespace, name, uid),
        ).fetchall()
        if not rows:
            return False
        kept = json.loads(rows[0][0] or "[]") if events else []
        kept = [*kept, *events][-MAX_EVENTS:]
        sets, args = "status = ?, phase = ?", [json.dumps(status), phase]
        if events:
            sets += ", events = ?"
            args.append(json.dumps(kept))
        db.execute(
            f"UPDATE optimizationjobs SET {sets} WHERE namespace = ? AND name = ? AND uid = ?",
            [*args, namespace, name, uid],
        )
    return True


def delete(store: Store, namespace: str, name: str, uid: str) -> None:
    with store.transaction() as db:
        db.execute(
            "DELETE FROM optimizationjobs WHERE namespace = ? AND name = ? AND uid = ?",
            (namespace, name, uid),
        )
