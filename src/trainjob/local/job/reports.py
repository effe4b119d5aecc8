"""What a local job's training reports while it runs: its status endpoint and the history kept.

The supervisor serves the job's status endpoint (:mod:`trainjob.local.job.statusserver`) and gives its
trainer pods the env to reach it. Each accepted update arrives on a server thread and is queued;
on each tick the supervisor takes them: the latest becomes the TrainJob's
``status.trainerStatus`` (a report replaces the one before, as upstream's apply does), and every
one is kept in the job's history (``LocalExecutor.metric_history``), the newest
:data:`MAX_REPORTS`. Used by :mod:`trainjob.local.job.supervisor`.
"""

from __future__ import annotations

import json
import queue
from pathlib import Path
from typing import Any

from trainjob.local.job import statusserver
from trainjob.local.state import home as homes
from trainjob.local.state.store import ReportRow, Store

MAX_REPORTS = 10_000  # progress reports kept of a job (the newest)


class Reports:
    """The status endpoint of one job and the reports not yet written to the store."""

    def __init__(self, store: Store, namespace: str, name: str, uid: str) -> None:
        self.store, self.namespace, self.name, self.uid = store, namespace, name, uid
        self.server: statusserver.StatusServer | None = None
        self.env: dict[str, str] = {}  # for the trainer pods: where and how to report
        self.updates: queue.SimpleQueue[dict[str, Any]] = queue.SimpleQueue()
        self.pending: list[ReportRow] = []  # taken, to be written with the next status
        self.count = 0  # reports stored for the job (about)

    def start(self, home: Path) -> str | None:
        """Serve the job's status endpoint; without it (no free port, no disk) the job runs:
        what went wrong, to be said (its progress is not reported), else None."""
        try:
            creds = statusserver.credentials(homes.job_dir(home, self.namespace, self.name))
            server = statusserver.StatusServer(self.namespace, self.name, creds, self.updates.put)
        except OSError as e:
            return str(e)
        self.server = server
        self.env = statusserver.pod_env(server.url, creds)
        return None

    def take(self, status: dict[str, Any]) -> bool:
        """Take the updates that came since the last tick into ``status`` and :attr:`pending`;
        whether any came."""
        taken = False
        while True:
            try:
                update = self.updates.get_nowait()
            except queue.Empty:
                return taken
            status["trainerStatus"] = update
            metrics = {m["name"]: m["value"] for m in update.get("metrics") or ()}
            self.pending.append(
                ReportRow(
                    self.namespace,
                    self.name,
                    self.uid,
                    update["lastUpdatedTime"],
                    update.get("progressPercentage"),
                    update.get("estimatedRemainingSeconds"),
                    json.dumps(metrics),
                )
            )
            self.count += 1
            taken = True

    def written(self) -> None:
        """The pending reports were stored: forget them, and trim the history now and then."""
        self.pending = []
        if self.count > MAX_REPORTS + MAX_REPORTS // 10:
            self.store.trim_reports(self.namespace, self.name, self.uid, MAX_REPORTS)
            self.count = MAX_REPORTS

    def stop(self) -> None:
        """Stop serving (the endpoint's port is closed on return); updates already accepted stay
        queued for :meth:`take`. Again: nothing."""
        if self.server is not None:
            self.server.stop()
            self.server = None
