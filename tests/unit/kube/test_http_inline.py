"""Inline routes (trainjob.kube.http): computed on the server's loop, without the hand-over
to a pool thread and back that cost more than an admission review under load; a route that finds
it must block (``check_inline``) runs again on a pool thread, as does one with a large body."""

from __future__ import annotations

import threading
import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest

from trainjob.kube import http


@pytest.fixture
def server() -> Iterator[tuple[http.Server, list[tuple[str, bool]]]]:
    ran: list[tuple[str, bool]] = []  # (thread, reached the end)

    def route(body: bytes) -> http.Response:
        name = threading.current_thread().name
        if b"block" in body:
            http.check_inline()  # e.g. before an apiserver request
        ran.append((name, True))
        return 200, "text/plain", name.encode()

    srv = http.serve(
        "127.0.0.1",
        0,
        {("POST", "/inline"): route, ("POST", "/pooled"): route},
        "t",
        inline=frozenset({("POST", "/inline")}),
    )
    try:
        yield srv, ran
    finally:
        srv.stop()


def post(srv: http.Server, path: str, body: bytes) -> str:
    req = urllib.request.Request(f"http://127.0.0.1:{srv.port}{path}", data=body, method="POST")
    with urllib.request.urlopen(req, timeout=10) as resp:
        return str(resp.read().decode())


def test_an_inline_route_runs_on_the_loop(
    server: tuple[http.Server, list[tuple[str, bool]]],
) -> None:
    srv, ran = server
    assert post(srv, "/inline", b"{}") == "http-t"
    assert post(srv, "/pooled", b"{}").startswith("http-t_")
    assert ran == [("http-t", True), (ran[1][0], True)]


def test_a_route_that_must_block_moves_to_a_thread_and_a_large_body_goes_there_at_once(
    server: tuple[http.Server, list[tuple[str, bool]]],
) -> None:
    srv, ran = server
    assert post(srv, "/inline", b"block").startswith("http-t_")
    assert len(ran) == 1, "the inline attempt stopped at check_inline"
    assert post(srv, "/inline", b"x" * (http.SMALL_BODY + 1)).startswith("http-t_")
    http.check_inline()  # outside a route: nothing raised


def test_on_route_is_told_of_each_request_for_a_route() -> None:
    """The webhooks tell trainjob.controller.priority each review they handle (a request for no
    route tells nothing)."""
    told: list[str] = []
    srv = http.serve(
        "127.0.0.1",
        0,
        {("POST", "/inline"): lambda _b: (200, "text/plain", b"ok")},
        "t",
        inline=frozenset({("POST", "/inline")}),
        on_route=lambda: told.append(threading.current_thread().name),
    )
    try:
        assert post(srv, "/inline", b"{}") == "ok"
        with pytest.raises(urllib.error.HTTPError):
            post(srv, "/nowhere", b"{}")
        assert told == ["http-t"], "once, on the server's loop"
    finally:
        srv.stop()
