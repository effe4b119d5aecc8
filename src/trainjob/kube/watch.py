"""Watch streams: one HTTP response of newline-delimited JSON events, stoppable from any thread.

Each line is ``{"type": ADDED|MODIFIED|DELETED|BOOKMARK|ERROR, "object": {...}}``. ``BOOKMARK``
events only carry a newer ``metadata.resourceVersion`` (asked for with ``allowWatchBookmarks``);
an ``ERROR`` event carries a Status and is raised as its :mod:`trainjob.kube.errors` class (410
Gone when the resourceVersion is too old, so the caller lists again). Built by
:meth:`trainjob.kube.client.Client.watch`, consumed by ``trainjob.controller.informer``.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx

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


def error_of(resp: httpx.Response, method: str, url: str) -> ApiError:
    """The error of a streamed error answer (its body is read first)."""
    resp.read()
    try:
        body: Any = resp.json()
    except ValueError:
        body = resp.text
    return from_status(resp.status_code, body, method, url)


class Watch:
    """An open watch. Iterate it for events; :meth:`stop` ends the iteration from another thread."""

    def __init__(
        self,
        http: httpx.Client,
        path: str,
        params: dict[str, str],
        headers: list[tuple[str, str]],
        timeout: httpx.Timeout,
    ) -> None:
        self._http = http
        self._path = path
        self._params = params
        self._headers = headers
        self._timeout = timeout
        self._response: httpx.Response | None = None
        self._stopped = threading.Event()
        self._lock = threading.Lock()

    def __iter__(self) -> Iterator[WatchEvent]:
        if self._stopped.is_set():
            return
        try:
            with self._http.stream(
                "GET", self._path, params=self._params, headers=self._headers, timeout=self._timeout
            ) as resp:
                with self._lock:
                    self._response = resp
                if self._stopped.is_set():
                    return
                if resp.status_code >= 400:
                    raise error_of(resp, "GET", str(resp.url))
                for line in resp.iter_lines():
                    if self._stopped.is_set():
                        return
                    event = parse_event(line)
                    if event is not None:
                        yield event
        except ApiError:
            if self._stopped.is_set():
                return
            raise
        except (httpx.HTTPError, RuntimeError, OSError) as e:
            if self._stopped.is_set():
                return
            raise Unreachable(f"watch {self._path}: {e}", method="GET", url=self._path) from e

    def stop(self) -> None:
        """End the stream now (closes the connection); safe to call more than once."""
        self._stopped.set()
        with self._lock:
            resp = self._response
        if resp is None:
            return
        # A blocked read only returns once the socket is shut down; closing the response from
        # another thread is not enough. Either may complain on a half-read stream.
        stream = resp.extensions.get("network_stream")
        sock = stream.get_extra_info("socket") if stream is not None else None
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        with contextlib.suppress(Exception):
            resp.close()
