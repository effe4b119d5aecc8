"""The local job store's schema: its tables (``SCHEMA``), its version and the upgrades from
older versions (:func:`create_or_upgrade`). Each upgrade only adds what older rows lack, so a
store written by an older trainjob is read, once upgraded, with nothing lost.

Versions: 2 added ``pods.ready``; 3 ``jobs.runner`` (how its pods run); 4 the listing's columns
(:data:`trainjob.local.state.rows.DERIVED_COLS`), filled in from each job's JSON on upgrade, and
``jobs.whole`` with the triggers that keep it (:data:`TRIGGERS`); 5 the ``optimizationjobs``
table (sweeps: :mod:`trainjob.local.client.sweep_store`), which ``CREATE TABLE IF NOT EXISTS`` adds."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from trainjob.errors import ConfigError
from trainjob.local.state import rows

SCHEMA_VERSION = 5

_LISTING_DDL = {
    "runtime_ref": "TEXT NOT NULL DEFAULT ''",
    "num_nodes": "INTEGER",
    "job_ttl": "INTEGER",
    "runtime_ttl": "INTEGER",
    "finished_at": "REAL",
    "reported": "TEXT NOT NULL DEFAULT ''",
    "progress": "INTEGER",
    "eta": "INTEGER",
    "metrics": "TEXT NOT NULL DEFAULT '{}'",
}
"""The listing's columns of ``jobs`` (schema 4), in :data:`rows.DERIVED_COLS`' order."""


def whole_json(prefix: str = "") -> str:
    """SQL: whether a row's ``trainjob`` and ``status`` are JSON objects (valid JSON whose first
    character but white space is ``{``; an empty status is ``{}``)."""
    space = "' ' || char(9) || char(10) || char(13)"
    cols = (f"{prefix}trainjob", f"coalesce(nullif({prefix}status, ''), '{{}}')")
    return " AND ".join(
        f"json_valid({c}) AND substr(ltrim({c}, {space}), 1, 1) = '{{'" for c in cols
    )


TRIGGERS = [
    f"""CREATE TRIGGER IF NOT EXISTS jobs_whole_{when} AFTER {event} ON jobs BEGIN
  UPDATE jobs SET whole = ({whole_json("NEW.")}) WHERE rowid = NEW.rowid;
END"""
    for when, event in (("insert", "INSERT"), ("update", "UPDATE OF trainjob, status"))
]
"""``jobs.whole`` kept by SQLite itself on every write of a job's JSON, by trainjob or anyone
(a hand edit with sqlite3): a listing reads the flag, not the JSON, to skip a damaged row."""

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS jobs (
  namespace TEXT NOT NULL,
  name TEXT NOT NULL,
  uid TEXT NOT NULL,
  created TEXT NOT NULL,
  created_ts REAL NOT NULL,
  trainjob TEXT NOT NULL,
  runtime TEXT NOT NULL,
  plan TEXT NOT NULL,
  cwd TEXT NOT NULL,
  phase TEXT NOT NULL,
  reason TEXT NOT NULL DEFAULT '',
  message TEXT NOT NULL DEFAULT '',
  status TEXT NOT NULL DEFAULT '{}',
  started TEXT,
  completed TEXT,
  restarts INTEGER NOT NULL DEFAULT 0,
  suspend INTEGER NOT NULL DEFAULT 0,
  deleting INTEGER NOT NULL DEFAULT 0,
  supervisor_pid INTEGER,
  supervisor_start TEXT,
  runner TEXT NOT NULL DEFAULT '',
  {listing_columns},
  whole INTEGER NOT NULL DEFAULT 1,
  PRIMARY KEY (namespace, name)
);
CREATE TABLE IF NOT EXISTS pods (
  namespace TEXT NOT NULL,
  name TEXT NOT NULL,
  uid TEXT NOT NULL,
  job TEXT NOT NULL,
  job_index INTEGER NOT NULL,
  idx INTEGER NOT NULL,
  pod_name TEXT NOT NULL,
  phase TEXT NOT NULL,
  exit_code INTEGER,
  started TEXT,
  finished TEXT,
  restarts INTEGER NOT NULL DEFAULT 0,
  pid INTEGER,
  pid_start TEXT,
  message TEXT NOT NULL DEFAULT '',
  ready INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (namespace, name, job, job_index, idx)
);
CREATE TABLE IF NOT EXISTS events (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  namespace TEXT NOT NULL,
  name TEXT NOT NULL,
  uid TEXT NOT NULL,
  type TEXT NOT NULL,
  reason TEXT NOT NULL,
  message TEXT NOT NULL,
  timestamp TEXT NOT NULL,
  involved_kind TEXT NOT NULL,
  involved_name TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS events_job ON events (namespace, name);
CREATE TABLE IF NOT EXISTS reports (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  namespace TEXT NOT NULL,
  name TEXT NOT NULL,
  uid TEXT NOT NULL,
  time TEXT NOT NULL,
  progress INTEGER,
  eta INTEGER,
  metrics TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX IF NOT EXISTS reports_job ON reports (namespace, name, uid, id);
CREATE TABLE IF NOT EXISTS optimizationjobs (
  namespace TEXT NOT NULL,
  name TEXT NOT NULL,
  uid TEXT NOT NULL,
  created TEXT NOT NULL,
  created_ts REAL NOT NULL,
  job TEXT NOT NULL,
  status TEXT NOT NULL DEFAULT '{}',
  phase TEXT NOT NULL,
  cwd TEXT NOT NULL,
  runner TEXT NOT NULL DEFAULT '',
  deleting INTEGER NOT NULL DEFAULT 0,
  supervisor_pid INTEGER,
  supervisor_start TEXT,
  events TEXT NOT NULL DEFAULT '[]',
  PRIMARY KEY (namespace, name)
);
CREATE TABLE IF NOT EXISTS runtimes (
  kind TEXT NOT NULL,
  namespace TEXT NOT NULL,
  name TEXT NOT NULL,
  body TEXT NOT NULL,
  PRIMARY KEY (kind, namespace, name)
);
""".replace("{listing_columns}", ",\n  ".join(f"{c} {d}" for c, d in _LISTING_DDL.items()))


def newer_error(path: Path, version: object) -> ConfigError:
    return ConfigError(
        f"the job store {path} has schema version {version}, newer than this "
        f"trainjob's {SCHEMA_VERSION}: upgrade trainjob or use another TRAINJOB_HOME"
    )


def create_or_upgrade(db: sqlite3.Connection, path: Path) -> None:
    """Create the tables (in the caller's write transaction), or upgrade older ones."""
    for stmt in SCHEMA.split(";"):
        if stmt.strip():
            db.execute(stmt)
    job_cols = {r[1] for r in db.execute("PRAGMA table_info(jobs)")}
    if "whole" in job_cols:  # else added by the upgrade to 4, below, before its triggers
        for trigger in TRIGGERS:
            db.execute(trigger)
    row = db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    if row is None:
        db.execute(
            "INSERT INTO meta (key, value) VALUES ('schema_version', ?)",
            (str(SCHEMA_VERSION),),
        )
    elif int(row[0]) > SCHEMA_VERSION:
        raise newer_error(path, row[0])
    elif int(row[0]) < SCHEMA_VERSION:
        # Upgrades, one version at a time; each only adds what older rows lack.
        if int(row[0]) < 2:
            db.execute("ALTER TABLE pods ADD COLUMN ready INTEGER NOT NULL DEFAULT 0")
        job_cols = {r[1] for r in db.execute("PRAGMA table_info(jobs)")}
        if int(row[0]) < 3 and "runner" not in job_cols:
            db.execute("ALTER TABLE jobs ADD COLUMN runner TEXT NOT NULL DEFAULT ''")
        if int(row[0]) < 4:
            _add_listing_columns(db, job_cols)
        db.execute(
            "UPDATE meta SET value = ? WHERE key = 'schema_version'",
            (str(SCHEMA_VERSION),),
        )


def _add_listing_columns(db: sqlite3.Connection, job_cols: set[str]) -> None:
    """Schema 4: the listing's columns, each job's filled in from its JSON (one pass)."""
    for col, ddl in _LISTING_DDL.items():
        if col not in job_cols:
            db.execute(f"ALTER TABLE jobs ADD COLUMN {col} {ddl}")
    if "whole" not in job_cols:
        db.execute("ALTER TABLE jobs ADD COLUMN whole INTEGER NOT NULL DEFAULT 1")
    db.execute(f"UPDATE jobs SET whole = ({whole_json()})")
    for trigger in TRIGGERS:
        db.execute(trigger)
    found = db.execute("SELECT rowid, trainjob, runtime, status FROM jobs").fetchall()
    for rowid, trainjob, runtime, status in found:
        values = rows.derived({"trainjob": trainjob, "runtime": runtime, "status": status})
        sets = ", ".join(f"{k} = ?" for k in values)
        db.execute(f"UPDATE jobs SET {sets} WHERE rowid = ?", [*values.values(), rowid])
