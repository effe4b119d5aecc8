"""Watch streams: one HTTP response of newline-delimited JSON events, stoppable from any thread.

Each line is ``{"type": ADDED|MODIFIED|DELETED|BOOKMARK|ERROR, "object": {...}}``. ``BOOKMARK``
events only carry a newer ``metadata.resourceVersion`` (asked for with ``allowWatchBookmarks``);
an ``ERROR`` event carries a Status and is raised as its :mod:`trainjob.kube.errors` class (410
Gone when the resourceVersion is too old, so the caller lists again). Built by
:meth:`trainjob.kube.client.Client.watch`, consumed by ``trainjob.kube.informer``.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from trainjob.kube import transport
from trainjob.kube.errors import ApiError, Unreachable, from_status

ADDED = "ADDED"
MODIFIED = "MODIFIED"
DELETED = "DELETED"
BOOKMARK = "BOOKMARK"
ERROR = "ERROR"


@dataclass(frozen=True)
class WatchEvent:
    type: str
    object: dict[str, Any]

    @property
    def resource_version(self) -> str:
        return str((self.object.get("metadata") or {}).get("resourceVersion") or "")


def parse_event(line: str | bytes) -> WatchEvent | None:
    """One line of a watch stream -> event (None for a blank keep-alive line).

    Raises the matching ApiError for an ``ERROR`` event.
    """
    if isinstance(line, bytes):
        line = line.decode()
    line = line.strip()
    if not line:
        return None
    doc = json.loads(line)
    etype = str(doc.get("type", ""))
    obj = doc.get("object") or {}
    if etype == ERROR:
        raise from_status(int(obj.get("code") or 500), obj, "WATCH", "")
    return WatchEvent(etype, obj)


def error_of(stream: transport.Stream, method: str, url: str) -> ApiError:
    """The error of a streamed error answer (its body is read first)."""
    raw = stream.read()
    try:
        body: Any = json.loads(raw)
    except ValueError:
        body = raw.decode("utf-8", "replace")
    return from_status(stream.status, body, method, url)


class Watch:
    """An open watch. Iterate it for events; :meth:`stop` ends the iteration from another thread."""

    def __init__(
        self,
        http: transport.Http,
        path: str,
        params: dict[str, str],
        headers: list[tuple[str, str]],
        timeout: float,
        read_timeout: float,
    ) -> None:
        self._http = http
        self._path = path
        self._params = params
        self._headers = headers
        self._timeout = timeout
        self._read_timeout = read_timeout
        self._stream: transport.Stream | None = None
        self._stopped = threading.Event()
        self._lock = threading.Lock()

    def __iter__(self) -> Iterator[WatchEvent]:
        if self._stopped.is_set():
            return
        try:
            stream = self._http.stream(
                "GET", self._path, self._params, self._headers, self._timeout, self._read_timeout
            )
            with self._lock:
                self._stream = stream
            try:
                if self._stopped.is_set():
                    return
                if stream.status >= 400:
                    raise error_of(stream, "GET", self._path)
                for line in stream.iter_lines():
                    if self._stopped.is_set():
                        return
                    event = parse_event(line)
                    if event is not None:
                        yield event
            finally:
                stream.close()
        except ApiError:
            if self._stopped.is_set():
                return
            raise
        except (transport.TransportError, ValueError) as e:
            if self._stopped.is_set():
                return
            raise Unreachable(f"watch {self._path}: {e}", method="GET", url=self._path) from e

    def stop(self) -> None:
        """End the stream now (shuts its connection down); safe to call more than once."""
        self._stopped.set()
        with self._lock:
            stream = self._stream
        if stream is not None:
            stream.shutdown()  # the reading thread then sees the end and closes the stream
