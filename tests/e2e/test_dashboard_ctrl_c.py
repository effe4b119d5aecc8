"""Ctrl-C on ``trainjob dashboard`` while a browser holds its streams open: the process ends at
once, saying nothing more (before: 2 s, then uvicorn's ``ERROR: Cancel 3 running task(s)...``
and a traceback for each stream). A real ``trainjob dashboard`` process and real SSE streams (the
jobs table, a job's page and its logs: what an open job page holds), then SIGINT."""

from __future__ import annotations

import signal
import threading
import time
from pathlib import Path

import httpx
import pytest
from tests.e2e.dashboard_browser import start_dashboard

pytestmark = pytest.mark.e2e


def test_ctrl_c_with_streams_open_ends_quietly_and_at_once(tmp_path: Path) -> None:
    d = start_dashboard(tmp_path / "home")
    got: list[bytes] = []
    done: list[str] = []

    def hold(path: str) -> None:
        with (
            httpx.Client(timeout=30) as client,
            client.stream("GET", d.url + path) as response,
        ):
            for chunk in response.iter_bytes():
                got.append(chunk)
        done.append(path)  # the server ended the response: no error on the client either

    paths = ["/api/jobs/stream", "/api/jobs/default/none/stream", "/api/jobs/default/none/logs"]
    threads = [threading.Thread(target=hold, args=(p,), daemon=True) for p in paths]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 30
    while not got and time.monotonic() < deadline:
        time.sleep(0.1)
    assert got, "the jobs stream sent nothing"
    time.sleep(1)
    start = time.monotonic()
    d.proc.send_signal(signal.SIGINT)
    rest, _ = d.proc.communicate(timeout=30)
    took = time.monotonic() - start
    for t in threads:
        t.join(10)
    said = "".join(d.output) + rest
    assert d.proc.returncode in (0, 130), said  # 130: stopped by SIGINT, as a shell reports
    assert "ERROR" not in said and "Traceback" not in said, said
    assert took < 1.5, f"{took:.1f}s to stop"
    assert sorted(done) == sorted(paths), done
