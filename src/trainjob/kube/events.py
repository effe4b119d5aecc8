"""Kubernetes Events about an object, with repeats folded into one Event (client-go's recorder).

:class:`EventRecorder` writes ``events.k8s.io/v1`` Events (``regarding``, ``reason``, ``action``,
``note``, ``reportingController``) and falls back to ``core/v1`` Events when the apiserver does not
serve ``events.k8s.io`` (both are what ``kubectl describe`` shows). The same event (object,
type, reason, action, note) emitted again within ``series_window`` seconds bumps the first
Event's ``series.count`` instead of creating a new object, so a TrainJob retried every few seconds
does not flood etcd. Recording never raises: an event is best effort, as in client-go.

Used by the controller (``TrainJobResourcesCreationFailed`` and friends).
"""

from __future__ import annotations

import logging
import secrets
import socket
import threading
import time
from collections import OrderedDict
from typing import Any

from trainjob.core import times
from trainjob.kube import resources as r
from trainjob.kube.client import Client
from trainjob.kube.errors import ApiError, NotFound

log = logging.getLogger(__name__)

NORMAL = "Normal"
WARNING = "Warning"

Obj = dict[str, Any]


class EventRecorder:
    """Emits Events for one reporting controller (``reportingController``/``source.component``)."""

    def __init__(
        self,
        client: Client,
        controller: str,
        instance: str | None = None,
        series_window: float = 600.0,
        max_series: int = 4096,
    ) -> None:
        self.client = client
        self.controller = controller
        self.instance = instance or socket.gethostname()
        self.series_window = series_window
        self.max_series = max_series
        self._series: OrderedDict[tuple[str, ...], tuple[str, str, int, float, str]] = OrderedDict()
        self._lock = threading.Lock()
        self._events_v1: bool | None = None

    def event(self, regarding: Obj, type_: str, reason: str, action: str, note: str) -> None:
        """Record one event about ``regarding`` (a TrainJob dict); logs and swallows failures."""
        meta = regarding.get("metadata") or {}
        namespace = meta.get("namespace") or "default"
        key = (
            meta.get("uid") or "",
            namespace,
            meta.get("name") or "",
            type_,
            reason,
            action,
            note,
        )
        now = time.time()
        with self._lock:
            prev = self._series.get(key)
            if prev is not None and now - prev[3] > self.series_window:
                prev = None
        try:
            if prev is None:
                name, api, ns = self._create(regarding, namespace, type_, reason, action, note, now)
                count = 1
            else:
                name, api, count, _, ns = prev
                count += 1
                self._bump(api, name, ns, count, now)
        except ApiError as e:
            log.warning("recording event %s on %s/%s: %s", reason, namespace, meta.get("name"), e)
            with self._lock:
                self._series.pop(key, None)
            return
        with self._lock:
            first_seen = now if prev is None else prev[3]
            self._series[key] = (name, api, count, first_seen, ns)
            self._series.move_to_end(key)
            while len(self._series) > self.max_series:
                self._series.popitem(last=False)

    def _create(
        self,
        regarding: Obj,
        namespace: str,
        type_: str,
        reason: str,
        action: str,
        note: str,
        now: float,
    ) -> tuple[str, str, str]:
        meta = regarding.get("metadata") or {}
        name = f"{meta.get('name', 'object')}.{secrets.token_hex(8)}"
        ref = {
            "apiVersion": regarding.get("apiVersion"),
            "kind": regarding.get("kind"),
            "name": meta.get("name"),
            "namespace": namespace,
            "uid": meta.get("uid"),
            "resourceVersion": meta.get("resourceVersion"),
        }
        ref = {k: v for k, v in ref.items() if v}
        if self._events_v1 is not False:
            body = {
                "apiVersion": "events.k8s.io/v1",
                "kind": "Event",
                "metadata": {"name": name, "namespace": namespace},
                "eventTime": times.micro(now),
                "reportingController": self.controller,
                "reportingInstance": self.instance,
                "action": action,
                "reason": reason,
                "note": note[:1024],
                "type": type_,
                "regarding": ref,
            }
            try:
                self.client.create(r.EVENTS, body, namespace)
                self._events_v1 = True
                return name, "v1", namespace
            except NotFound:
                if self._events_v1:
                    raise
                self._events_v1 = False
        stamp = times.format(now if now is not None else time.time())
        core = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": name, "namespace": namespace},
            "involvedObject": ref,
            "reason": reason,
            "message": note[:1024],
            "type": type_,
            "action": action,
            "count": 1,
            "firstTimestamp": stamp,
            "lastTimestamp": stamp,
            "source": {"component": self.controller},
            "reportingComponent": self.controller,
            "reportingInstance": self.instance,
        }
        self.client.create(r.CORE_EVENTS, core, namespace)
        return name, "core", namespace

    def _bump(self, api: str, name: str, namespace: str, count: int, now: float) -> None:
        if api == "v1":
            patch: Obj = {"series": {"count": count, "lastObservedTime": times.micro(now)}}
            self.client.patch(r.EVENTS, name, patch, namespace)
        else:
            patch = {
                "count": count,
                "lastTimestamp": times.format(now if now is not None else time.time()),
            }
            self.client.patch(r.CORE_EVENTS, name, patch, namespace)
