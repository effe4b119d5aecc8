"""The TrainJob status endpoint's protocol (KEP-2779), spelled as upstream v2.3 has it.

Training code inside a TrainJob's trainer pod POSTs ``{"trainerStatus": {...}}`` to
``/apis/trainer.kubeflow.org/v1alpha1/namespaces/{ns}/trainjobs/{name}/status`` with a bearer
token whose audience is that path without ``/apis/`` (``trainer.kubeflow.org/v1alpha1/...``); the
server patches the TrainJob's ``status.trainerStatus``. The env, the mount path and the volume
are upstream's ``TrainJobStatus`` runtime plugin's (``pkg/runtime/framework/plugins/
trainjobstatus``), the limits and the error bodies its status server's (``pkg/statusserver``),
the client side the Kubeflow SDK 0.5.0's ``update_trainjob_status``.

One home for all three: :mod:`trainjob.progress` (the helper training code calls), the local
supervisor's loopback server (:mod:`trainjob.local.job.statusserver`) and the controller's
(:mod:`trainjob.controller.statusserver`) read these names and :func:`parse_request` checks a
body the same way in both places (the CRD's limits, ``api/crd_rules.py``, which a unit test
holds these to).
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from trainjob.core import times

# The env upstream's TrainJobStatus plugin injects into every trainer container.
ENV_SERVER_URL = "KUBEFLOW_TRAINER_SERVER_URL"
ENV_CA_CERT = "KUBEFLOW_TRAINER_SERVER_CA_CERT"
ENV_TOKEN = "KUBEFLOW_TRAINER_SERVER_TOKEN"
ENV_NAMES = (ENV_SERVER_URL, ENV_CA_CERT, ENV_TOKEN)

# The projected volume it mounts: a ServiceAccount token for the endpoint's audience and the
# server's CA (upstream: from a ConfigMap ``<trainjob>-tls-config`` per TrainJob; trainjob: from
# the pod's own annotation :data:`CA_ANNOTATION`, by the downward API, with no object to write).
MOUNT_PATH = "/var/run/secrets/kubeflow/trainer"
CA_CERT_FILE = "ca.crt"
TOKEN_FILE = "token"
TOKEN_VOLUME = "kubeflow-trainer-token"
TOKEN_EXPIRY_SECONDS = 3600
CA_ANNOTATION = "trainer.kubeflow.org/status-server-ca"
"""The trainer pod template's annotation holding the status server's CA (PEM): the projected
volume's ``ca.crt`` reads it through the downward API."""

FIELD_MANAGER = "trainer-status"
"""The server-side-apply field manager that owns ``status.trainerStatus``."""

MAX_BODY = 1 << 16
"""Bytes a request body may have (64 KiB); more is 413."""

MAX_METRICS = 256
MAX_METRIC_LENGTH = 64
MAX_INT32 = 2**31 - 1

# The Kubeflow SDK helper's client-side rules (kept by :mod:`trainjob.progress`).
MIN_UPDATE_INTERVAL_SECONDS = 5.0
TOKEN_CACHE_TTL_SECONDS = 300.0

_AUDIENCE_PREFIX = "trainer.kubeflow.org"
_PATH = re.compile(
    r"^/apis/trainer\.kubeflow\.org/v1alpha1/namespaces/([^/]+)/trainjobs/([^/]+)/status$"
)


def path(namespace: str, name: str) -> str:
    """The endpoint's path for one TrainJob."""
    return f"/apis/trainer.kubeflow.org/v1alpha1/namespaces/{namespace}/trainjobs/{name}/status"


def audience(namespace: str, name: str) -> str:
    """The audience a token must carry to post one TrainJob's status."""
    return f"{_AUDIENCE_PREFIX}/v1alpha1/namespaces/{namespace}/trainjobs/{name}/status"


def parse_path(url_path: str) -> tuple[str, str] | None:
    """(namespace, name) of an endpoint path; None for any other path."""
    m = _PATH.match(url_path.split("?", 1)[0])
    return (m.group(1), m.group(2)) if m else None


def bearer(header: str | None) -> str:
    """The credentials of an RFC 7235 ``Bearer`` Authorization header ('' when there is not
    exactly one), as upstream's ``extractRawToken``."""
    parts = (header or "").split()
    if len(parts) != 2 or parts[0].lower() != "bearer":
        return ""
    return parts[1]


# ---------------------------------------------------------------------------------------------
# Errors: a metav1.Status body, as upstream's badRequest writes it.

REASON_FORBIDDEN = "Forbidden"
REASON_NOT_FOUND = "NotFound"
REASON_INVALID = "Invalid"
REASON_TOO_LARGE = "RequestEntityTooLarge"
REASON_INTERNAL = "InternalError"


class RequestError(Exception):
    """A refused request: the HTTP code, the Status reason and a message for the caller."""

    def __init__(self, code: int, reason: str, message: str) -> None:
        super().__init__(message)
        self.code, self.reason, self.message = code, reason, message

    def body(self) -> bytes:
        return status_body(self.code, self.reason, self.message)


def status_body(code: int, reason: str, message: str) -> bytes:
    """A ``metav1.Status`` failure, JSON-encoded."""
    status = {"metadata": {}, "status": "Failure", "message": message, "reason": reason}
    return (json.dumps({**status, "code": code}) + "\n").encode()


def forbidden() -> RequestError:
    return RequestError(403, REASON_FORBIDDEN, "Forbidden")


def not_found(what: str = "Train job not found") -> RequestError:
    return RequestError(404, REASON_NOT_FOUND, what)


def too_large() -> RequestError:
    return RequestError(413, REASON_TOO_LARGE, "Payload too large")


def invalid(field: str, value: object, detail: str) -> RequestError:
    return RequestError(
        422,
        REASON_INVALID,
        f"status.trainerStatus{field}: Invalid value: {json.dumps(value)}: {detail}",
    )


# ---------------------------------------------------------------------------------------------
# The body


def _int32(ts: dict[str, Any], key: str, maximum: int) -> int | None:
    value = ts.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise invalid(f".{key}", value, "must be an integer")
    if isinstance(value, float):
        if not math.isfinite(value) or value != int(value):
            raise invalid(f".{key}", value, "must be an integer")
        value = int(value)
    if value < 0:
        raise invalid(f".{key}", value, "should be greater than or equal to 0")
    if value > maximum:
        raise invalid(f".{key}", value, f"should be less than or equal to {maximum}")
    return value


def parse_request(body: bytes) -> dict[str, Any] | None:
    """The ``trainerStatus`` of a request body, checked against the CRD's rules and normalised
    (``lastUpdatedTime`` as ``metav1.Time`` writes it, unknown fields dropped); None when the
    body carries none (upstream answers 200 and changes nothing). Raises :class:`RequestError`
    (422 Invalid, 413) naming the field."""
    if len(body) > MAX_BODY:
        raise too_large()
    try:
        request = json.loads(body or b"null")
    except (ValueError, UnicodeDecodeError):
        raise RequestError(422, REASON_INVALID, "Invalid payload") from None
    if not isinstance(request, dict):
        raise RequestError(422, REASON_INVALID, "Invalid payload")
    ts = request.get("trainerStatus")
    if ts is None:
        return None
    if not isinstance(ts, dict):
        raise RequestError(422, REASON_INVALID, "Invalid payload")
    out: dict[str, Any] = {}
    progress = _int32(ts, "progressPercentage", 100)
    if progress is not None:
        out["progressPercentage"] = progress
    eta = _int32(ts, "estimatedRemainingSeconds", MAX_INT32)
    if eta is not None:
        out["estimatedRemainingSeconds"] = eta
    metrics = ts.get("metrics")
    if metrics is not None:
        if not isinstance(metrics, list):
            raise invalid(".metrics", type(metrics).__name__, "must be a list of {name, value}")
        if len(metrics) > MAX_METRICS:
            raise invalid(".metrics", len(metrics), f"must have at most {MAX_METRICS} items")
        checked = []
        for i, m in enumerate(metrics):
            if not isinstance(m, dict):
                raise invalid(f".metrics[{i}]", m, "must be an object with name and value")
            item = {}
            for key in ("name", "value"):
                v = m.get(key)
                if not isinstance(v, str) or not v:
                    raise invalid(f".metrics[{i}].{key}", v, "must be a non-empty string")
                if len(v) > MAX_METRIC_LENGTH:
                    raise invalid(
                        f".metrics[{i}].{key}", v, f"may not be more than {MAX_METRIC_LENGTH} bytes"
                    )
                item[key] = v
            checked.append(item)
        out["metrics"] = checked
    updated = ts.get("lastUpdatedTime")
    if updated is None:
        raise RequestError(
            422, REASON_INVALID, "lastUpdatedTime is required when trainerStatus is present"
        )
    seconds = times.parse(updated) if isinstance(updated, str) else None
    if seconds is None:
        raise invalid(".lastUpdatedTime", updated, "must be an RFC 3339 date-time")
    out["lastUpdatedTime"] = times.format(seconds)
    return out
