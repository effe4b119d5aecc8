"""RFC 3339 time as Kubernetes writes it (``metav1.Time``: ``2025-01-02T03:04:05Z``, UTC, seconds).

The one home for "now" and for reading a timestamp back: status conditions, events, the local
store, the CLI's AGE column and the SDK's datetimes all go through these functions. Parsing
accepts what an apiserver may send (fractional seconds of ``metav1.MicroTime``, a ``Z`` or a
numeric offset) and is independent of the machine's time zone and daylight saving time.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime

LAYOUT = "%Y-%m-%dT%H:%M:%SZ"


def format(seconds: float) -> str:
    """POSIX ``seconds`` as an RFC 3339 timestamp in UTC, to the second."""
    return time.strftime(LAYOUT, time.gmtime(seconds))


def now() -> str:
    """The current time as ``metav1.Time`` writes it."""
    return format(time.time())


def parse_datetime(value: str | None) -> datetime | None:
    """An RFC 3339 timestamp as an aware datetime (UTC when it names no offset); None when
    absent or unparsable."""
    if not value:
        return None
    try:
        out = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return None
    return out if out.tzinfo else out.replace(tzinfo=UTC)


def parse(value: str | None) -> float | None:
    """An RFC 3339 timestamp as POSIX seconds; None when absent or unparsable."""
    dt = parse_datetime(value)
    return None if dt is None else dt.timestamp()


def micro(seconds: float | None = None) -> str:
    """``metav1.MicroTime``: RFC 3339 with microseconds, UTC (events, leases); default now."""
    t = time.time() if seconds is None else seconds
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
