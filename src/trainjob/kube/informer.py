"""Informers: a local cache of one resource type, kept current by list + watch, with handlers.

An :class:`Informer` runs in its own thread: it lists every object (in pages), calls the handlers
for what changed since its last view, then watches from the list's resourceVersion with bookmarks.
A watch that ends is resumed from the last resourceVersion seen; ``410 Gone`` (too old) makes it
list again; other failures (an apiserver restart) back off and list again. A resource type the
apiserver does not serve (an optional CRD such as PodGroup) is reported once and retried slowly;
the informer still counts as synced, with an empty cache.

``metadata_only`` informers keep ``PartialObjectMetadata`` (name, labels, ownerReferences) and never
hold Secret data in memory; a ``transform`` (:mod:`trainjob.controller.cache`) trims what is kept. Handlers run on the informer thread and must be quick (they enqueue
keys). Used by ``trainjob.controller.manager``; reconcile reads the caches through ``get``.
"""

from __future__ import annotations

import logging
import random
import threading
from collections.abc import Callable
from typing import Any

from trainjob.kube.client import Client
from trainjob.kube.errors import ApiError, Gone, NotFound
from trainjob.kube.resources import Resource
from trainjob.kube.watch import ADDED, BOOKMARK, DELETED, MODIFIED, Watch

log = logging.getLogger(__name__)

Obj = dict[str, Any]
Handler = Callable[[str, Obj, Obj | None], None]
"""``handler(event_type, obj, old)``: ADDED/MODIFIED/DELETED, the object, the cached previous one."""
Transform = Callable[[Obj], Obj | None]
"""What the cache keeps of an object (client-go's ``SetTransform``); None keeps nothing of it."""

METADATA_KIND = "PartialObjectMetadata"
MISSING_RETRY_SECONDS = 30.0
MAX_BACKOFF_SECONDS = 30.0


def resource_version_newer(a: str | None, b: str | None) -> bool:
    """True when resourceVersion ``a`` is newer than ``b`` (they are etcd revisions in practice)."""
    try:
        return int(a or 0) > int(b or 0)
    except ValueError:
        return a != b


class Informer:
    """A cache of ``resource`` objects (optionally one namespace) kept in sync by list+watch."""

    def __init__(
        self,
        client: Client,
        resource: Resource,
        *,
        namespace: str | None = None,
        metadata_only: bool = False,
        label_selector: str | None = None,
        page_size: int = 500,
        watch_timeout: int = 300,
        transform: Transform | None = None,
    ) -> None:
        self.client = client
        self.resource = resource
        self.namespace = namespace
        self.metadata_only = metadata_only
        self.label_selector = label_selector
        self.page_size = page_size
        self.watch_timeout = watch_timeout
        self.transform = transform
        self.synced = threading.Event()
        self.missing = False
        self.resource_version = ""
        self._store: dict[str, Obj] = {}
        self._lock = threading.Lock()
        self._handlers: list[Handler] = []
        self._stopped = threading.Event()
        self._watch: Watch | None = None
        self._thread: threading.Thread | None = None
        self.name = f"{resource.group_resource}{'(meta)' if metadata_only else ''}"

    # -- cache reads -----------------------------------------------------------------------------
    def get(self, key: str) -> Obj | None:
        """The cached object of ``namespace/name`` (``name`` for cluster-scoped); do not mutate."""
        with self._lock:
            return self._store.get(key)

    def list(self) -> list[Obj]:
        with self._lock:
            return list(self._store.values())

    def __len__(self) -> int:
        with self._lock:
            return len(self._store)

    def add_handler(self, handler: Handler) -> None:
        self._handlers.append(handler)

    def update_if_newer(self, obj: Obj) -> None:
        """Write through an object our own write returned, unless the cache holds a newer one.

        The watch delivers the same object moments later; until then reconciles see our write,
        and that event calls no handler (its writer already acted on it: a TrainJob's own
        status write, the JobSet and ConfigMaps it just made, bring it back to the queue no
        more). An object the cache lacks is only added when the watch has not got that far yet
        (else it may have been deleted since, and the cache would keep a ghost). A metadata-only
        informer keeps the object's metadata, as its watch would.
        """
        key = self.resource.key(obj)
        rv = (obj.get("metadata") or {}).get("resourceVersion")
        if self.metadata_only and obj.get("kind") != METADATA_KIND:
            # what the metadata watch will deliver of it (a Secret's data never kept)
            obj = {"apiVersion": "meta.k8s.io/v1", "kind": METADATA_KIND,
                   "metadata": dict(obj.get("metadata") or {})}  # fmt: skip
        if self.transform is not None:
            kept = self.transform(obj)
            if kept is None:
                return
            obj = kept
        with self._lock:
            cur = self._store.get(key)
            seen = self.resource_version if cur is None else _rv(cur)
            if resource_version_newer(rv, seen):
                self._store[key] = obj

    # -- lifecycle -------------------------------------------------------------------------------
    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name=f"informer-{self.name}", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stopped.set()
        w = self._watch
        if w is not None:
            w.stop()

    def join(self, timeout: float | None = None) -> None:
        if self._thread is not None:
            self._thread.join(timeout)

    def _run(self) -> None:
        failures = 0
        while not self._stopped.is_set():
            try:
                self._list()
                failures = 0
                self.missing = False
                self.synced.set()
                while not self._stopped.is_set():
                    self._watch_once()
            except Gone:
                log.debug("%s: resourceVersion too old, listing again", self.name)
            except NotFound:
                if not self.missing:
                    log.warning(
                        "%s/%s is not served by the apiserver (CRD not installed?); "
                        "retrying every %ds",
                        self.resource.group_resource,
                        self.resource.version,
                        MISSING_RETRY_SECONDS,
                    )
                self.missing = True
                self.synced.set()
                self._stopped.wait(MISSING_RETRY_SECONDS)
            except ApiError as e:
                if self._stopped.is_set():
                    return
                failures += 1
                delay = min(MAX_BACKOFF_SECONDS, 0.2 * 2 ** min(failures, 8))
                delay *= random.uniform(0.8, 1.2)
                log.warning("%s: list/watch failed (retrying in %.1fs): %s", self.name, delay, e)
                self._stopped.wait(delay)
            except Exception:
                log.exception("%s: informer error", self.name)
                self._stopped.wait(1.0)

    def _list(self) -> None:
        items, rv = self.client.list_all(
            self.resource,
            self.namespace,
            page_size=self.page_size,
            label_selector=self.label_selector,
            metadata_only=self.metadata_only,
        )
        fresh: dict[str, Obj] = {}
        for item in items:
            kept = item if self.transform is None else self.transform(item)
            if kept is not None:
                fresh[self.resource.key(kept)] = kept
        with self._lock:
            old = self._store
            self._store = fresh
            self.resource_version = rv
        for key, obj in fresh.items():
            prev = old.get(key)
            if prev is None:
                self._dispatch(ADDED, obj, None)
            elif _rv(prev) != _rv(obj):
                self._dispatch(MODIFIED, obj, prev)
        for key, prev in old.items():
            if key not in fresh:
                self._dispatch(DELETED, prev, prev)

    def _watch_once(self) -> None:
        timeout = int(self.watch_timeout * random.uniform(1.0, 2.0))
        w = self.client.watch(
            self.resource,
            self.namespace,
            resource_version=self.resource_version,
            label_selector=self.label_selector,
            timeout_seconds=timeout,
            metadata_only=self.metadata_only,
        )
        self._watch = w
        if self._stopped.is_set():
            w.stop()
        for event in w:
            rv = event.resource_version
            if event.type == BOOKMARK:
                self.resource_version = rv or self.resource_version
                continue
            key = self.resource.key(event.object)
            kept = event.object if self.transform is None else self.transform(event.object)
            if event.type == DELETED:
                kept = None
            with self._lock:
                prev = self._store.get(key)
                if kept is None:  # a delete, or an object the transform no longer keeps
                    self._store.pop(key, None)
                else:
                    self._store[key] = kept
                if rv:
                    self.resource_version = rv
            if kept is not None:
                # The version the cache holds already came from our own write
                # (update_if_newer): the reconcile that wrote it knew it, so no handler runs
                # again for it (the listing does the same for an unchanged resourceVersion).
                if event.type in (ADDED, MODIFIED) and not (
                    prev is not None and rv and _rv(prev) == rv
                ):
                    self._dispatch(event.type, kept, prev)
            elif event.type == DELETED:
                self._dispatch(DELETED, prev or event.object, prev)
            elif prev is not None:
                self._dispatch(DELETED, prev, prev)

    def _dispatch(self, etype: str, obj: Obj, old: Obj | None) -> None:
        for handler in self._handlers:
            try:
                handler(etype, obj, old)
            except Exception:
                log.exception("%s: handler failed on %s", self.name, self.resource.key(obj))


def _rv(obj: Obj) -> str:
    return str((obj.get("metadata") or {}).get("resourceVersion") or "")
