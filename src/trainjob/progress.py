"""``update_trainjob_status``: report a training's progress from inside a TrainJob.

The same function, signature and semantics as the Kubeflow SDK 0.5.0's
``kubeflow.trainer.backends.kubernetes.utils.update_trainjob_status`` (KEP-2779), on the standard
library only, so training code imports it without the SDK's dependencies::

    import trainjob

    trainjob.update_trainjob_status(
        progress_percent=40, estimated_remaining_seconds=120, metrics={"loss": 0.71, "epoch": 2}
    )

It posts ``{"trainerStatus": {...}}`` to the URL in ``KUBEFLOW_TRAINER_SERVER_URL`` with the token
read from the file ``KUBEFLOW_TRAINER_SERVER_TOKEN`` names (cached 300 s), verifying TLS with the
CA file ``KUBEFLOW_TRAINER_SERVER_CA_CERT`` names. Both trainjob backends set that env in every
trainer pod: the local supervisor's loopback server and the controller's status server answer
it. Safe anywhere: it returns False outside a TrainJob, never raises, sends at most one update
every 5 seconds (a throttled call returns False), clamps the percentage to 0-100 and the ETA to
>= 0, turns metric values into strings and keeps the first 256 metrics.

:func:`update_unthrottled` is the same update without the throttle, for the two reports of a
run the throttle must not drop (trainjob's built-in trainers send them,
:mod:`trainjob.trainers.reporting`): the first with a loss and the last (100 %, ETA 0, the final
metrics). The 5 s throttle would otherwise drop whichever came within 5 s of the report before;
a run's last report is what a finished job shows for good. It counts for the throttle as any
accepted update does.

A throttled call is not lost for good: the newest one is held, and when the process exits
(``atexit``) a held report newer than the last accepted update is sent, with the time it was
made. Training code that reports every step (``progress_percent=100`` at its last) thus ends
with its last call's report, not with whatever came 5 s before it; the calls still return False
at once, as upstream's, and a process that reported nothing since its last accepted update sends
nothing at exit.

At the top of the package because ``trainjob.progress`` is a public import path (docs/progress.md;
``trainjob.update_trainjob_status`` is its re-export) that training code imports inside a pod,
with the standard library only.
"""

from __future__ import annotations

import atexit
import http.client
import json
import logging
import os
import ssl
import threading
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from urllib.parse import urlsplit

from trainjob.core import trainerstatus as ts

__all__ = ["update_trainjob_status"]

_logger = logging.getLogger(__name__)

_lock = threading.Lock()
_last_update = 0.0
_token: str | None = None
_token_read = 0.0
_conn: http.client.HTTPConnection | None = None
_conn_key: tuple[str, str, str | None] | None = None
_Report = tuple[int | None, int | None, dict[str, float | int | str] | None, datetime]
_held: _Report | None = None  # the newest throttled call, sent at exit (see the docstring)
_at_exit = False  # whether _send_held is registered with atexit


def _reset() -> None:
    """Forget the throttle, the cached token and the connection (tests, a forked process)."""
    global _last_update, _token, _token_read, _conn, _conn_key, _held
    with _lock:
        _last_update, _token, _token_read, _conn_key, _held = 0.0, None, 0.0, None, None
        if _conn is not None:
            _conn.close()
        _conn = None


def _read_token(path: str | None, now: float) -> str | None:
    global _token, _token_read
    if _token and now - _token_read < ts.TOKEN_CACHE_TTL_SECONDS:
        return _token
    if not path or not os.path.exists(path):
        return None
    try:
        with open(path) as f:
            _token, _token_read = f.read().strip(), now
    except OSError as e:
        _logger.warning("Unable to read token from %s: %s", path, e)
        return None
    return _token


def _connection(url: str, ca_file: str | None) -> tuple[http.client.HTTPConnection, str, bool]:
    """A kept-alive connection to the server (one per URL and CA, as a requests Session), the
    request path, and whether the connection was used before."""
    global _conn, _conn_key
    parts = urlsplit(url)
    key = (parts.scheme, parts.netloc, ca_file)
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    if _conn is not None and _conn_key == key:
        return _conn, target, True
    if _conn is not None:
        _conn.close()
    if parts.scheme == "https":
        context = ssl.create_default_context(
            cafile=ca_file if ca_file and os.path.exists(ca_file) else None
        )
        _conn = http.client.HTTPSConnection(
            parts.hostname or "", parts.port, timeout=5, context=context
        )
    elif parts.scheme == "http":
        _conn = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=5)
    else:
        raise ValueError(f"{ts.ENV_SERVER_URL} must be an http(s) URL, not {url!r}")
    _conn_key = key
    return _conn, target, False


def _post(url: str, ca_file: str | None, token: str, body: bytes) -> tuple[int, bytes]:
    global _conn
    headers = {
        "Authorization": f"Bearer {token}",
        "Content-Type": "application/json",
        "Content-Length": str(len(body)),
    }
    while True:
        conn, target, reused = _connection(url, ca_file)
        try:
            conn.request("POST", target, body=body, headers=headers)
            response = conn.getresponse()
            return response.status, response.read()
        except (OSError, http.client.HTTPException):
            conn.close()
            _conn = None
            if not reused:
                raise
            # a kept-alive connection the server closed meanwhile: once more on a new one


def update_trainjob_status(
    progress_percent: int | None = None,
    estimated_remaining_seconds: int | None = None,
    metrics: Mapping[str, float | int | str] | None = None,
) -> bool:
    """Report training progress to the TrainJob's status server (see the module docstring).

    ``progress_percent``: 0-100; ``estimated_remaining_seconds``: the ETA; ``metrics``: name ->
    value, sent as strings. True when the server accepted the update; False outside a TrainJob,
    when throttled (less than 5 s after the last accepted update), or when it failed (logged as
    a warning). Never raises.
    """
    return _update(progress_percent, estimated_remaining_seconds, metrics, force=False)


def update_unthrottled(
    progress_percent: int | None = None,
    estimated_remaining_seconds: int | None = None,
    metrics: Mapping[str, float | int | str] | None = None,
) -> bool:
    """:func:`update_trainjob_status` sent even within 5 s of the last accepted update (a run's
    first report with a loss, its last one); the updates after it are throttled from it. Not
    part of the Kubeflow SDK's API: training code calls :func:`update_trainjob_status`."""
    return _update(progress_percent, estimated_remaining_seconds, metrics, force=True)


def _update(
    progress_percent: int | None,
    estimated_remaining_seconds: int | None,
    metrics: Mapping[str, float | int | str] | None,
    *,
    force: bool,
    made: datetime | None = None,
) -> bool:
    global _last_update, _held, _at_exit
    try:
        url = os.environ.get(ts.ENV_SERVER_URL)
        if not url:
            return False
        with _lock:
            now = time.monotonic()
            if not force and _last_update and now - _last_update < ts.MIN_UPDATE_INTERVAL_SECONDS:
                copied = dict(metrics) if metrics else None
                _held = (progress_percent, estimated_remaining_seconds, copied, datetime.now(UTC))
                if not _at_exit:
                    atexit.register(_send_held)
                    _at_exit = True
                return False
            token = _read_token(os.environ.get(ts.ENV_TOKEN), now)
            if not token:
                _logger.debug("No authentication token available")
                return False
            when = made or datetime.now(UTC)
            status: dict[str, object] = {"lastUpdatedTime": when.isoformat()}
            if progress_percent is not None:
                status["progressPercentage"] = max(0, min(100, int(progress_percent)))
            if estimated_remaining_seconds is not None:
                status["estimatedRemainingSeconds"] = max(0, int(estimated_remaining_seconds))
            if metrics:
                if len(metrics) > ts.MAX_METRICS:
                    _logger.warning(
                        "metrics dict has %d entries, truncating to %d (SDK limit)",
                        len(metrics),
                        ts.MAX_METRICS,
                    )
                    metrics = dict(list(metrics.items())[: ts.MAX_METRICS])
                status["metrics"] = [{"name": str(k), "value": str(v)} for k, v in metrics.items()]
            body = json.dumps({"trainerStatus": status}).encode()
            code, answer = _post(url, os.environ.get(ts.ENV_CA_CERT), token, body)
            if code == 200:
                _last_update = time.monotonic()
                if _held is not None and _held[3] <= when:
                    _held = None  # this report is newer than the one held
                _logger.debug("Status update sent: %s%%", progress_percent)
                return True
        _logger.warning("Status update failed: HTTP %s", code)
        _logger.debug("Response body: %.500s", answer.decode(errors="replace"))
        return False
    except Exception as e:  # never raises: progress must not break training
        _logger.warning("Failed to send status update: %s", e)
        return False


def _send_held() -> None:
    """At exit: send the newest throttled report, if none was accepted after it."""
    global _held
    with _lock:
        held, _held = _held, None
    if held is not None:
        progress_percent, eta, metrics, made = held
        _update(progress_percent, eta, metrics, force=True, made=made)
