"""Who may use the dashboard: loopback only by default, a token when bound elsewhere.

- Bound to loopback (the default), requests must name a loopback host (``Host: 127.0.0.1``,
  ``localhost``, ``[::1]``): a web page elsewhere cannot reach the dashboard through DNS
  rebinding.
- Bound to any other address, a token is required (generated at start unless given, printed in
  the URL): ``?token=`` once (the browser then holds it in an HttpOnly, SameSite=Strict cookie and
  the URL loses it), a ``Authorization: Bearer`` header, or the cookie.
- A request that changes a job (suspend, resume, delete) must carry the
  ``X-Trainjob-Dashboard`` header, which a cross-site form cannot send: no CSRF.
- Every response carries a Content-Security-Policy that allows only the dashboard's own scripts
  (no inline script: a job name or log line that slipped into the page would still not run).
"""

from __future__ import annotations

import hmac
import ipaddress
import secrets
from collections.abc import Awaitable, Callable, MutableMapping
from http.cookies import SimpleCookie
from typing import Any
from urllib.parse import parse_qsl, urlencode

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

COOKIE = "trainjob-dashboard-token"
ACTION_HEADER = "x-trainjob-dashboard"
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; connect-src 'self'; font-src 'self'; base-uri 'none'; "
    "form-action 'none'; frame-ancestors 'none'"
)
HEADERS = [
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
]


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a name or address) is this machine only."""
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def new_token() -> str:
    return secrets.token_urlsafe(24)


def _host_name(value: str) -> str:
    """The host of a ``Host`` header, without its port (``[::1]:8090`` -> ``::1``)."""
    if value.startswith("["):
        return value[1 : value.find("]")] if "]" in value else value
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


class Guard:
    """The ASGI middleware that applies the rules of the module docstring."""

    def __init__(self, app: ASGIApp, *, token: str | None, loopback_only: bool) -> None:
        self.app = app
        self.token = token
        self.loopback_only = loopback_only

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = list(message.get("headers", [])) + HEADERS
            await send(message)

        if self.loopback_only and not is_loopback(_host_name(headers.get("host", ""))):
            await _plain(send_with_headers, 421, "the dashboard answers only as localhost\n")
            return
        if self.token is not None:
            given = self._given(scope, headers)
            if given is None or not hmac.compare_digest(given.encode(), self.token.encode()):
                await _plain(
                    send_with_headers,
                    401,
                    "a token is required: open the URL that `trainjob dashboard` printed\n",
                )
                return
            if _query_token(scope) is not None and scope["method"] == "GET":
                await self._strip_token(scope, send_with_headers)
                return
        if scope["method"] not in ("GET", "HEAD") and headers.get(ACTION_HEADER) != "1":
            await _plain(send_with_headers, 403, f"missing the {ACTION_HEADER} header\n")
            return
        await self.app(scope, receive, send_with_headers)

    def _given(self, scope: Scope, headers: dict[str, str]) -> str | None:
        auth = headers.get("authorization", "")
        if auth.lower().startswith("bearer "):
            return auth[7:].strip()
        query = _query_token(scope)
        if query is not None:
            return query
        cookie = SimpleCookie()
        try:
            cookie.load(headers.get("cookie", ""))
        except Exception:
            return None
        morsel = cookie.get(COOKIE)
        return morsel.value if morsel is not None else None

    async def _strip_token(self, scope: Scope, send: Send) -> None:
        """The token came in the URL: keep it in a cookie, and send the browser to the same
        page without it (so it stays out of the history and of copied links)."""
        query = [
            (k, v) for k, v in parse_qsl(scope.get("query_string", b"").decode()) if k != "token"
        ]
        location = scope["path"] + (f"?{urlencode(query)}" if query else "")
        cookie = f"{COOKIE}={self.token}; Path=/; HttpOnly; SameSite=Strict"
        await send(
            {
                "type": "http.response.start",
                "status": 303,
                "headers": [(b"location", location.encode()), (b"set-cookie", cookie.encode())],
            }
        )
        await send({"type": "http.response.body", "body": b""})


def _query_token(scope: Scope) -> str | None:
    query: bytes = scope.get("query_string", b"")
    for k, v in parse_qsl(query.decode()):
        if k == "token":
            return v
    return None


async def _plain(send: Send, status: int, text: str) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"text/plain; charset=utf-8")],
        }
    )
    await send({"type": "http.response.body", "body": text.encode()})
