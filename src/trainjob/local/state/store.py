"""The local job store: one SQLite file (WAL) shared by clients and supervisors.

Tables: ``jobs`` (the TrainJob, its resolved runtime and Plan, phase, status, the supervisor's
identity, how its pods run: as processes or containers), ``pods`` (one row per pod of the JobSet), ``events``, ``reports`` (every progress report
the job's training made to its status endpoint, :mod:`trainjob.local.job.statusserver`)
and ``runtimes`` (runtimes applied
with ``LocalExecutor.apply_runtime``). Every write is one short transaction, so a client and the
supervisors of several jobs can use the file at once; a supervisor writes only rows of its own
job ``uid``, so a deleted and re-created job is never touched by the old job's supervisor.

The schema is versioned (``meta.schema_version``); a store written by a newer trainjob is refused
rather than misread. Every SQLite error is one line naming the store and what to do, never a
traceback: a write the disk refused (full, read-only) rolls back as :class:`StoreFullError`, a
lock held past the busy timeout is :class:`StoreBusyError`, a truncated or garbled file
:class:`StoreDamagedError`. Reading needs no write lock (the schema is only written when it must
be created or upgraded), so reads work beside a long transaction and on a read-only home. Called by :mod:`trainjob.local.client.executor` and :mod:`trainjob.local.job.supervisor`.
The tables and their upgrades are in :mod:`trainjob.local.state.schema`, the rows in
:mod:`trainjob.local.state.rows`. Each write of a job's TrainJob, runtime or status also sets the
listing's columns that follow from them (:func:`trainjob.local.state.rows.derived`), so a listing of
every job (:meth:`Store.listing`) reads scalars and parses no TrainJob.
"""

from __future__ import annotations

import errno
import json
import os
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote

from trainjob.errors import AlreadyExistsError, ConfigError
from trainjob.local.state import files, schema
from trainjob.local.state.rows import (
    EVENT_COLS,
    JOB_COLS,
    LISTING_COLS,
    POD_COLS,
    REPORT_COLS,
    EventRow,
    JobRow,
    PodRow,
    ReportRow,
    derived,
    pod_row,
)
from trainjob.local.state.schema import SCHEMA_VERSION

__all__ = [
    "SCHEMA_VERSION", "EventRow", "JobRow", "PodRow", "ReportRow", "Store", "StoreBusyError",
    "StoreDamagedError", "StoreFullError",
]  # fmt: skip

# SQLite primary result codes (sqlite3.h).
SQLITE_BUSY, SQLITE_LOCKED, SQLITE_READONLY, SQLITE_CORRUPT = 5, 6, 8, 11
SQLITE_CANTOPEN, SQLITE_NOTADB = 14, 26
_WRITE_ERRORS = (10, 13, 14)  # SQLITE_IOERR, SQLITE_FULL, SQLITE_CANTOPEN: a write the disk refused
BUSY_TIMEOUT = 30.0  # seconds a transaction waits for another process's lock


class StoreFullError(ConfigError):
    """The job store could not be written: its disk is full, or the file is not writable."""


class StoreBusyError(ConfigError):
    """Another process held the job store's lock longer than the busy timeout."""


class StoreDamagedError(ConfigError):
    """The job store's file is not a database, or a damaged one (truncated, overwritten)."""


class Store:
    """A connection to ``path`` (created with its schema on first use).

    The home is created 0700 and the store's files tightened to 0600 on every open
    (:mod:`trainjob.local.state.files`). A home this user cannot write (a read-only mount) is opened
    read-only: listing, describing and logs work; a write is a StoreFullError saying so.
    """

    def __init__(self, path: Path, *, busy_timeout: float = BUSY_TIMEOUT) -> None:
        # Private to its user: the store holds Secrets of the Plan (the MPI SSH key) and every
        # job's env. SQLite gives the -wal and -shm files the database file's mode.
        self.path = path
        self.read_only = False
        self._empty = False
        self.busy_timeout = busy_timeout
        files.ensure_home(path.parent)
        for f in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
            files.tighten_file(f)
        try:
            os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_NOFOLLOW, 0o600))
        except FileExistsError:
            pass
        except OSError as e:
            if e.errno not in (errno.EROFS, errno.EACCES, errno.EPERM):
                raise StoreFullError(self._cannot_write(e)) from None
            if not path.exists():
                raise StoreFullError(
                    f"cannot create the job store {path}: {e.strerror} (its directory cannot be "
                    "written): set TRAINJOB_HOME to a directory you can write"
                ) from None
            self.read_only = True
        if not self.read_only and not os.access(path.parent, os.W_OK):
            self.read_only = True
        # One connection per Store, usable from any thread of this process (the SDK follows logs
        # in threads); the lock keeps each transaction and each read whole.
        self._lock = threading.RLock()
        self._db = self._connect()
        self._migrate()

    def _connect(self) -> sqlite3.Connection:
        with self._errors():
            if self.read_only:
                return self._connect_read_only()
            db = sqlite3.connect(
                str(self.path), timeout=self.busy_timeout, isolation_level=None,
                check_same_thread=False,
            )  # fmt: skip
            db.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout * 1000)}")
            db.execute("PRAGMA journal_mode = WAL")
            db.execute("PRAGMA synchronous = NORMAL")
            return db

    def _connect_read_only(self) -> sqlite3.Connection:
        """Read-only: WAL needs its -shm file, which a read-only directory cannot get; then the
        file is read as immutable (nobody can write it there either)."""
        uri = f"file:{quote(str(self.path))}?mode=ro"
        for params in ("", "&immutable=1"):
            try:
                db = sqlite3.connect(
                    uri + params, uri=True, timeout=self.busy_timeout, isolation_level=None,
                    check_same_thread=False,
                )  # fmt: skip
                db.execute("SELECT count(*) FROM sqlite_master").fetchall()
                return db
            except sqlite3.OperationalError as e:
                if params or (e.sqlite_errorcode & 0xFF) != SQLITE_CANTOPEN:
                    raise
        raise AssertionError("unreachable")  # pragma: no cover

    def close(self) -> None:
        self._db.close()

    @contextmanager
    def _errors(self) -> Iterator[None]:
        """SQLite's errors as one line each: what is wrong with the store and what to do."""
        try:
            yield
        except sqlite3.IntegrityError:
            raise
        except sqlite3.DatabaseError as e:
            code = getattr(e, "sqlite_errorcode", 0) & 0xFF
            if code == SQLITE_READONLY or (self.read_only and code in _WRITE_ERRORS):
                raise StoreFullError(
                    f"cannot write the job store {self.path}: it is read-only here ({e}): "
                    "reading jobs works, changing them needs a TRAINJOB_HOME you can write"
                ) from None
            if code in _WRITE_ERRORS:
                raise StoreFullError(self._cannot_write(e)) from None
            if code in (SQLITE_BUSY, SQLITE_LOCKED):
                raise StoreBusyError(
                    f"the job store {self.path} is locked by another process and stayed locked "
                    f"for {self.busy_timeout:.0f} s ({e}): wait for it (a long sqlite3 session on "
                    "the file?) and try again"
                ) from None
            if code in (SQLITE_CORRUPT, SQLITE_NOTADB) or not code:
                raise StoreDamagedError(
                    f"the job store {self.path} is damaged ({e}): move it aside (mv {self.path} "
                    f"{self.path}.damaged) and trainjob starts an empty one; the jobs it held "
                    "are not in the new one"
                ) from None
            raise

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        with self._lock, self._errors():
            if self.read_only:
                raise StoreFullError(
                    f"cannot write the job store {self.path}: its directory is read-only: reading "
                    "jobs works, changing them needs a TRAINJOB_HOME you can write"
                )
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
                self._db.execute("COMMIT")
            except BaseException:
                if self._db.in_transaction:
                    self._db.execute("ROLLBACK")
                raise

    def _cannot_write(self, e: BaseException) -> str:
        where = self.path.parent
        try:
            import shutil  # here: its compression modules load with it

            free = f"{shutil.disk_usage(where).free // 1024} KiB free"
        except OSError:
            free = "free space unknown"
        return (
            f"cannot write the job store {self.path}: {e} ({free} on its disk): free some space "
            f"there (trainjob delete removes a job's logs), or set TRAINJOB_HOME to another disk"
        )

    def transaction(self) -> AbstractContextManager[sqlite3.Connection]:
        """One write transaction (``BEGIN IMMEDIATE``), SQLite's errors as this store's: for a
        table kept by a module of its own (the sweeps', :mod:`trainjob.local.client.sweep_store`)."""
        return self._tx()

    def read(self, sql: str, args: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """The rows of one query, SQLite's errors as this store's (see :meth:`transaction`)."""
        return self._read(sql, args)

    def data_version(self) -> int:
        """SQLite's ``PRAGMA data_version``: it changes when another connection commits, so a
        loop that waits for a change asks this (microseconds) instead of reading its rows."""
        rows = self._read("PRAGMA data_version")
        return int(rows[0][0]) if rows else 0

    def _read(self, sql: str, args: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        if self._empty:
            return []
        with self._lock, self._errors():
            return self._db.execute(sql, args).fetchall()

    def _schema_version(self) -> int | None:
        """The store's schema version, read without a write lock (None: no schema yet)."""
        try:
            rows = self._read("SELECT value FROM meta WHERE key = 'schema_version'")
        except sqlite3.OperationalError as e:
            if "no such table" in str(e):
                return None
            raise
        return int(rows[0][0]) if rows else None

    def _migrate(self) -> None:
        version = self._schema_version()
        if version == SCHEMA_VERSION:
            return  # nothing to write: no write lock taken (reads beside a held lock work)
        if version is not None and version > SCHEMA_VERSION:
            raise schema.newer_error(self.path, version)
        if self.read_only:
            if version is None:
                self._empty = True  # a read-only home without jobs: every read finds none
                return
            raise StoreFullError(
                f"the job store {self.path} needs an upgrade (schema {version}) and is read-only "
                "here: run trainjob once with TRAINJOB_HOME writable"
            )
        with self._tx() as db:
            schema.create_or_upgrade(db, self.path)

    # -- jobs ---------------------------------------------------------------------------------

    def insert_job(self, row: JobRow) -> None:
        """Add a job; AlreadyExistsError when one of that namespace/name exists."""
        values = {c: getattr(row, c) for c in JOB_COLS}
        values.update(derived(values))
        marks = ", ".join("?" for _ in values)
        try:
            with self._tx() as db:
                db.execute(
                    f"INSERT INTO jobs ({', '.join(values)}) VALUES ({marks})",
                    list(values.values()),
                )
        except sqlite3.IntegrityError:
            raise AlreadyExistsError(
                f'trainjobs.trainer.kubeflow.org "{row.name}" already exists'
            ) from None

    def job(self, namespace: str, name: str) -> JobRow | None:
        rows = self._read(
            f"SELECT {', '.join(JOB_COLS)} FROM jobs WHERE namespace = ? AND name = ?",
            (namespace, name),
        )
        return JobRow(*rows[0]) if rows else None

    def jobs(self, namespace: str | None = None, *, light: bool = False) -> list[JobRow]:
        """Jobs oldest first; ``light`` leaves out the (large) runtime and plan columns."""
        cols = [f"'' AS {c}" if light and c in ("runtime", "plan") else c for c in JOB_COLS]
        sql = f"SELECT {', '.join(cols)} FROM jobs"
        args: tuple[str, ...] = ()
        if namespace is not None:
            sql += " WHERE namespace = ?"
            args = (namespace,)
        sql += " ORDER BY created_ts, namespace, name"
        return [JobRow(*r) for r in self._read(sql, args)]

    def update_job(
        self,
        namespace: str,
        name: str,
        uid: str,
        *,
        only_phases: Sequence[str] | None = None,
        **values: Any,
    ) -> bool:
        """Set columns of one job (of this ``uid``); with ``only_phases``, only while in them.

        Returns whether a row changed.
        """
        bad = set(values) - set(JOB_COLS)
        if bad:
            raise ValueError(f"unknown job columns: {sorted(bad)}")
        values.update(derived(values))
        sets = ", ".join(f"{k} = ?" for k in values)
        sql = f"UPDATE jobs SET {sets} WHERE namespace = ? AND name = ? AND uid = ?"
        args: list[Any] = [*values.values(), namespace, name, uid]
        if only_phases is not None:
            sql += f" AND phase IN ({', '.join('?' for _ in only_phases)})"
            args.extend(only_phases)
        with self._tx() as db:
            return db.execute(sql, args).rowcount > 0

    def write_status(
        self,
        namespace: str,
        name: str,
        uid: str,
        *,
        pods: Sequence[PodRow],
        events: Sequence[EventRow],
        reports: Sequence[ReportRow] = (),
        **values: Any,
    ) -> bool:
        """A supervisor's write: job columns, every pod row, new events and new progress reports,
        in one transaction.

        Nothing is written (and False returned) when the job is gone, was re-created, or was
        marked finished by someone else (a client that found the supervisor dead).
        """
        values.update(derived(values))
        sets = ", ".join(f"{k} = ?" for k in values)
        pod_cols = ", ".join(POD_COLS)
        ev_cols = ", ".join(EVENT_COLS)
        with self._tx() as db:
            cur = db.execute(
                f"UPDATE jobs SET {sets} WHERE namespace = ? AND name = ? AND uid = ? "
                "AND phase NOT IN ('Complete', 'Failed')",
                [*values.values(), namespace, name, uid],
            )
            if cur.rowcount == 0:
                return False
            db.executemany(
                f"INSERT OR REPLACE INTO pods ({pod_cols}) VALUES ({', '.join('?' for _ in POD_COLS)})",
                [[getattr(p, c) for c in POD_COLS] for p in pods],
            )
            db.executemany(
                f"INSERT INTO events ({ev_cols}) VALUES ({', '.join('?' for _ in EVENT_COLS)})",
                [[getattr(e, c) for c in EVENT_COLS] for e in events],
            )
            if reports:
                db.executemany(
                    f"INSERT INTO reports ({', '.join(REPORT_COLS)}) "
                    f"VALUES ({', '.join('?' for _ in REPORT_COLS)})",
                    [[getattr(m, c) for c in REPORT_COLS] for m in reports],
                )
        return True

    def delete_job(self, namespace: str, name: str, uid: str) -> None:
        with self._tx() as db:
            key = (namespace, name, uid)
            db.execute("DELETE FROM jobs WHERE namespace = ? AND name = ? AND uid = ?", key)
            db.execute("DELETE FROM pods WHERE namespace = ? AND name = ? AND uid = ?", key)
            db.execute("DELETE FROM events WHERE namespace = ? AND name = ? AND uid = ?", key)
            db.execute("DELETE FROM reports WHERE namespace = ? AND name = ? AND uid = ?", key)

    # -- pods ---------------------------------------------------------------------------------

    def put_pods(self, pods: Sequence[PodRow]) -> None:
        """Insert or replace pod rows, in one transaction."""
        cols = ", ".join(POD_COLS)
        marks = ", ".join("?" for _ in POD_COLS)
        with self._tx() as db:
            db.executemany(
                f"INSERT OR REPLACE INTO pods ({cols}) VALUES ({marks})",
                [[getattr(p, c) for c in POD_COLS] for p in pods],
            )

    def pods(self, namespace: str, name: str) -> list[PodRow]:
        rows = self._read(
            f"SELECT {', '.join(POD_COLS)} FROM pods WHERE namespace = ? AND name = ? "
            "ORDER BY rowid",
            (namespace, name),
        )
        return [pod_row(r) for r in rows]

    def pods_in(self, namespace: str | None = None) -> list[PodRow]:
        """Every pod row (of ``namespace``, or all) in one query, for listings of many jobs."""
        sql = f"SELECT {', '.join(POD_COLS)} FROM pods"
        args: tuple[str, ...] = ()
        if namespace is not None:
            sql += " WHERE namespace = ?"
            args = (namespace,)
        return [pod_row(r) for r in self._read(sql + " ORDER BY rowid", args)]

    def listing(self, namespace: str | None = None) -> list[tuple[Any, ...]]:
        """For listings: ``LISTING_COLS`` of every job, oldest first, then whether its
        TrainJob and status are whole JSON objects (0: a damaged row, which the executor
        reports; kept by SQLite triggers on every write, :data:`.schema.TRIGGERS`). No JSON is
        parsed: the listing's columns are kept on write."""
        sql = f"SELECT {', '.join(LISTING_COLS)}, whole FROM jobs"
        args: tuple[str, ...] = ()
        if namespace is not None:
            sql += " WHERE namespace = ?"
            args = (namespace,)
        return self._read(sql + " ORDER BY created_ts, namespace, name", args)

    # -- events -------------------------------------------------------------------------------

    def add_event(self, event: EventRow) -> None:
        cols = ", ".join(EVENT_COLS)
        marks = ", ".join("?" for _ in EVENT_COLS)
        with self._tx() as db:
            db.execute(
                f"INSERT INTO events ({cols}) VALUES ({marks})",
                [getattr(event, c) for c in EVENT_COLS],
            )

    def events(self, namespace: str, name: str) -> list[EventRow]:
        rows = self._read(
            f"SELECT {', '.join(EVENT_COLS)} FROM events WHERE namespace = ? AND name = ? "
            "ORDER BY id",
            (namespace, name),
        )
        return [EventRow(*r) for r in rows]

    # -- progress reports ---------------------------------------------------------------------

    def reports(self, namespace: str, name: str, uid: str, since: int = 0) -> list[ReportRow]:
        """The job's progress reports, oldest first, without the first ``since``."""
        rows = self._read(
            f"SELECT {', '.join(REPORT_COLS)} FROM reports "
            "WHERE namespace = ? AND name = ? AND uid = ? ORDER BY id LIMIT -1 OFFSET ?",
            (namespace, name, uid, max(0, since)),
        )
        return [ReportRow(*r) for r in rows]

    def trim_reports(self, namespace: str, name: str, uid: str, keep: int) -> None:
        """Drop all but the newest ``keep`` reports of a job."""
        with self._tx() as db:
            db.execute(
                "DELETE FROM reports WHERE id IN (SELECT id FROM reports WHERE namespace = ? "
                "AND name = ? AND uid = ? ORDER BY id DESC LIMIT -1 OFFSET ?)",
                (namespace, name, uid, keep),
            )

    # -- runtimes -----------------------------------------------------------------------------

    def put_runtime(self, kind: str, namespace: str, name: str, body: dict[str, Any]) -> None:
        with self._tx() as db:
            db.execute(
                "INSERT OR REPLACE INTO runtimes (kind, namespace, name, body) VALUES (?, ?, ?, ?)",
                (kind, namespace, name, json.dumps(body)),
            )

    def runtimes(self) -> list[dict[str, Any]]:
        rows = self._read("SELECT body FROM runtimes ORDER BY kind, namespace, name")
        return [json.loads(r[0]) for r in rows]
