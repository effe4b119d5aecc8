"""Who may use the dashboard: loopback names only when bound to loopback, the token when bound
elsewhere (header, cookie, or once in the URL), the action header on changes, and the server's
start: the URL with the port it got, and a port in use as one line."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from trainjob.dashboard import security
from trainjob.dashboard.app import create_app
from trainjob.dashboard.server import bind, url_of
from trainjob.errors import ConfigError
from trainjob.local.client.executor import LocalExecutor


def app(home: Path, token: str | None, loopback_only: bool):  # type: ignore[no-untyped-def]
    return create_app(lambda: LocalExecutor(home), token=token, loopback_only=loopback_only)


@pytest.mark.parametrize(
    ("host", "ok"),
    [
        ("127.0.0.1:8090", True),
        ("localhost:8090", True),
        ("[::1]:8090", True),
        ("localhost", True),
        ("attacker.example:8090", False),  # DNS rebinding: a page of that site reaching us
        ("127.0.0.1.nip.io", False),
    ],
)
def test_loopback_answers_only_loopback_names(tmp_path: Path, host: str, ok: bool) -> None:
    with TestClient(app(tmp_path, None, True)) as c:
        r = c.get("/api/jobs", headers={"host": host})
    assert (r.status_code == 200) is ok, r.text
    if not ok:
        assert r.status_code == 421


def test_a_token_is_required_beyond_loopback(tmp_path: Path) -> None:
    token = security.new_token()
    with TestClient(app(tmp_path, token, False), base_url="http://10.0.0.5:8090") as c:
        no = c.get("/api/jobs")
        assert no.status_code == 401 and "token" in no.text
        assert c.get("/api/jobs", headers={"authorization": "Bearer wrong"}).status_code == 401
        assert c.get("/api/jobs", headers={"authorization": f"Bearer {token}"}).status_code == 200
        # Once in the URL: kept in a cookie, and the browser sent to the URL without it.
        r = c.get(f"/?token={token}&phase=Running", follow_redirects=False)
        assert r.status_code == 303
        assert r.headers["location"] == "/?phase=Running"
        cookie = r.headers["set-cookie"]
        assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
        assert c.get("/api/jobs").status_code == 200  # the cookie
        assert c.get("/", headers={"cookie": f"{security.COOKIE}=wrong"}).status_code == 401


def test_changes_need_the_action_header(tmp_path: Path) -> None:
    with TestClient(app(tmp_path, None, True), base_url="http://127.0.0.1:8090") as c:
        r = c.post("/api/jobs/default/x/suspend")
        assert r.status_code == 403 and security.ACTION_HEADER in r.text
        r = c.post("/api/jobs/default/x/suspend", headers={security.ACTION_HEADER: "1"})
        assert r.status_code == 404  # past the guard: there is no such job


def test_is_loopback() -> None:
    assert security.is_loopback("127.0.0.1") and security.is_loopback("::1")
    assert security.is_loopback("127.5.0.1") and security.is_loopback("localhost")
    assert not security.is_loopback("0.0.0.0") and not security.is_loopback("10.1.2.3")


def test_bind_gives_the_port_and_a_clear_error_when_taken() -> None:
    sock = bind("127.0.0.1", 0)
    try:
        port = sock.getsockname()[1]
        assert port > 0
        assert url_of("127.0.0.1", port, None) == f"http://127.0.0.1:{port}/"
        assert url_of("10.0.0.5", port, "t0k") == f"http://10.0.0.5:{port}/?token=t0k"
        with pytest.raises(ConfigError, match=rf"cannot listen on 127.0.0.1:{port}: .*--port 0"):
            other = socket.socket()
            other.close()
            bind("127.0.0.1", port)
    finally:
        sock.close()
