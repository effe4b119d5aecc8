"""The errors of the Kubernetes REST client, one class per answer a caller acts on.

    trainjob.errors.TrainJobError
    └── ApiError                  the apiserver refused a request, or could not be reached
        ├── BadRequest            400 (a malformed request; a bug on our side)
        ├── Unauthorized          401 (credentials missing or expired)
        ├── Forbidden             403 (RBAC, or an admission webhook denied the request; also a trainjob.errors.ForbiddenError)
        ├── NotFound              404 (also a trainjob.errors.NotFoundError)
        ├── AlreadyExists         409 reason AlreadyExists (also a trainjob.errors.AlreadyExistsError)
        ├── Conflict              409 (optimistic concurrency: re-read and retry)
        ├── Gone                  410 Expired/Gone (a watch or list resourceVersion is too old)
        ├── Invalid               422 (the object failed validation; ``causes`` name the fields)
        ├── TooManyRequests       429 (throttled; ``retry_after`` seconds when the server said)
        ├── ServerError           5xx (the apiserver or etcd is in trouble: retry later)
        └── Unreachable           no HTTP answer at all (connection refused, TLS, timeout)
            └── Timeout           no answer in time

The HTTP library's exceptions never leave :mod:`trainjob.kube`: the client wraps them here, keeping
the original as ``__cause__``. :func:`is_temporary` says which errors a retry can cure. The
controller (``trainjob.controller``) and the SDK's kubernetes backend catch these classes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from trainjob.errors import AlreadyExistsError, ForbiddenError, NotFoundError, TrainJobError


@dataclass(frozen=True)
class Cause:
    """One ``details.causes`` entry of a Status: which field, why, and the message."""

    reason: str
    message: str
    field: str = ""


class ApiError(TrainJobError):
    """The apiserver answered with an error Status (or, for ``Unreachable``, not at all).

    ``status`` is the HTTP code (0 when unreachable), ``reason`` the Status reason (``NotFound``,
    ``AlreadyExists``, ``Invalid``, ...), ``message`` the Status message as ``kubectl`` prints it,
    ``body`` the decoded Status, ``method``/``url`` the request that failed.
    """

    def __init__(
        self,
        message: str,
        *,
        status: int = 0,
        reason: str = "",
        body: Any = None,
        method: str = "",
        url: str = "",
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.reason = reason
        self.body = body
        self.method = method
        self.url = url

    @property
    def causes(self) -> list[Cause]:
        """The field causes of the Status (``details.causes``), empty when there are none."""
        details = self.body.get("details") if isinstance(self.body, dict) else None
        out: list[Cause] = []
        for c in (details or {}).get("causes") or ():
            if isinstance(c, dict):
                out.append(Cause(c.get("reason", ""), c.get("message", ""), c.get("field", "")))
        return out

    @property
    def retry_after(self) -> float | None:
        """Seconds the server asked us to wait (``details.retryAfterSeconds``), if any."""
        details = self.body.get("details") if isinstance(self.body, dict) else None
        value = (details or {}).get("retryAfterSeconds")
        return float(value) if isinstance(value, int | float) and value > 0 else None


class BadRequest(ApiError):
    """400: the request itself is malformed."""


class Unauthorized(ApiError):
    """401: the credentials are missing, wrong or expired."""


class Forbidden(ApiError, ForbiddenError):
    """403: RBAC does not allow it, or an admission webhook denied the request."""


class NotFound(ApiError, NotFoundError):
    """404: the object (or the resource type: a CRD that is not installed) does not exist."""


class AlreadyExists(ApiError, AlreadyExistsError):
    """409 AlreadyExists: a create found an object of that name."""


class Conflict(ApiError):
    """409 Conflict: the object changed since it was read; re-read and retry."""


class Gone(ApiError):
    """410 Expired/Gone: the resourceVersion is too old (a watch must list again)."""


class Invalid(ApiError):
    """422: the object failed validation; :attr:`causes` lists the fields."""


class TooManyRequests(ApiError):
    """429: the apiserver is throttling; wait :attr:`retry_after` seconds (or back off)."""


class ServerError(ApiError):
    """5xx: an apiserver, etcd or webhook failure that a later retry may not see."""


class Unreachable(ApiError):
    """No HTTP answer: connection refused or reset, TLS failure, timeout."""


class Timeout(Unreachable):
    """No answer in time (connect, read or write timeout)."""


_BY_STATUS: dict[int, type[ApiError]] = {
    400: BadRequest,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    410: Gone,
    422: Invalid,
    429: TooManyRequests,
}


def from_status(status: int, body: Any, method: str = "", url: str = "") -> ApiError:
    """The error for an HTTP error answer: its class from the code and the Status reason."""
    reason = ""
    message = ""
    if isinstance(body, dict) and body.get("kind") == "Status":
        reason = str(body.get("reason") or "")
        message = str(body.get("message") or "")
        status = int(body.get("code") or status)
    elif isinstance(body, str):
        message = body.strip()
    if not message:
        message = f"{method} {url}: HTTP {status}"
    cls: type[ApiError]
    if status == 409 and reason == "AlreadyExists":
        cls = AlreadyExists
    elif status >= 500:
        cls = ServerError
    else:
        cls = _BY_STATUS.get(status, ApiError)
    return cls(message, status=status, reason=reason, body=body, method=method, url=url)


def is_temporary(err: BaseException) -> bool:
    """True when the same request may succeed later unchanged (throttling, 5xx, no answer)."""
    return isinstance(err, TooManyRequests | ServerError | Unreachable)


def not_found_message(plural: str, group: str, name: str) -> str:
    """The text of a Kubernetes NotFound error: ``trainingruntimes.trainer.kubeflow.org "x" not found``."""
    resource = f"{plural}.{group}" if group else plural
    return f'{resource} "{name}" not found'
