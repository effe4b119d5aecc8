"""``trainjob.update_trainjob_status`` against the local backend's real status server (TLS on
loopback, the job's own CA and token): what it sends, when it sends nothing, and that it never
raises. The same rules as the Kubeflow SDK 0.5.0's helper (throttle, token cache, clamps, 256
metrics); tests/e2e/test_progress_local.py runs that helper itself against the same server."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import trainjob
from trainjob import progress
from trainjob.core import trainerstatus as ts
from trainjob.local.job import statusserver


class Server:
    def __init__(self, tmp: Path, name: str = "job") -> None:
        self.updates: list[dict[str, Any]] = []
        self.creds = statusserver.credentials(tmp / name)
        self.server = statusserver.StatusServer("default", name, self.creds, self.updates.append)
        self.env = statusserver.pod_env(self.server.url, self.creds)


@pytest.fixture
def server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Server]:
    s = Server(tmp_path)
    for k, v in s.env.items():
        monkeypatch.setenv(k, v)
    progress._reset()
    yield s
    progress._reset()
    s.server.stop()


def test_it_is_the_public_helper() -> None:
    assert trainjob.update_trainjob_status is progress.update_trainjob_status


def test_outside_a_trainjob_it_returns_false_and_sends_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for k in ts.ENV_NAMES:
        monkeypatch.delenv(k, raising=False)
    progress._reset()
    assert trainjob.update_trainjob_status(progress_percent=10) is False


def test_an_update_reaches_the_server_over_verified_tls(server: Server) -> None:
    ok = trainjob.update_trainjob_status(
        progress_percent=42, estimated_remaining_seconds=90, metrics={"loss": 0.5, "step": 3}
    )
    assert ok is True
    [got] = server.updates
    assert got["progressPercentage"] == 42 and got["estimatedRemainingSeconds"] == 90
    assert got["metrics"] == [{"name": "loss", "value": "0.5"}, {"name": "step", "value": "3"}]
    assert ts.parse_request(
        b'{"trainerStatus": {"lastUpdatedTime": "%s"}}' % (got["lastUpdatedTime"].encode())
    )


def test_values_are_clamped_and_metrics_cut_to_256(
    server: Server, caplog: pytest.LogCaptureFixture
) -> None:
    many = {f"m{i}": i for i in range(300)}
    with caplog.at_level(logging.WARNING, "trainjob.progress"):
        assert trainjob.update_trainjob_status(
            progress_percent=140, estimated_remaining_seconds=-5, metrics=many
        )
    [got] = server.updates
    assert got["progressPercentage"] == 100 and got["estimatedRemainingSeconds"] == 0
    assert len(got["metrics"]) == 256 and got["metrics"][-1]["name"] == "m255"
    assert "truncating to 256" in caplog.text


def test_a_second_update_within_5_seconds_is_throttled(server: Server) -> None:
    assert trainjob.update_trainjob_status(progress_percent=1)
    assert trainjob.update_trainjob_status(progress_percent=2) is False
    assert [u["progressPercentage"] for u in server.updates] == [1]
    progress._last_update -= ts.MIN_UPDATE_INTERVAL_SECONDS  # 5 s later
    assert trainjob.update_trainjob_status(progress_percent=3)
    assert [u["progressPercentage"] for u in server.updates] == [1, 3]


def test_the_token_is_read_once_and_cached(server: Server) -> None:
    assert trainjob.update_trainjob_status(progress_percent=1)
    server.creds.token_file.write_text("changed\n")  # within 300 s the cached one is used
    progress._last_update = 0.0
    assert trainjob.update_trainjob_status(progress_percent=2)
    progress._token_read -= ts.TOKEN_CACHE_TTL_SECONDS  # 300 s later: read again, refused
    progress._last_update = 0.0
    assert trainjob.update_trainjob_status(progress_percent=3) is False
    assert [u["progressPercentage"] for u in server.updates] == [1, 2]


def test_a_refused_update_returns_false_and_does_not_throttle(
    server: Server, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv(ts.ENV_SERVER_URL, server.server.url.replace("/job/", "/other/"))
    with caplog.at_level(logging.WARNING, "trainjob.progress"):
        assert trainjob.update_trainjob_status(progress_percent=5) is False
    assert "HTTP 403" in caplog.text and server.updates == []
    monkeypatch.setenv(ts.ENV_SERVER_URL, server.server.url)
    assert trainjob.update_trainjob_status(progress_percent=6)  # not throttled by the failure


@pytest.mark.parametrize(
    "change",
    [
        pytest.param({ts.ENV_SERVER_URL: "https://127.0.0.1:1/x"}, id="nobody-listens"),
        pytest.param({ts.ENV_SERVER_URL: "ftp://127.0.0.1/x"}, id="not-http"),
        pytest.param({ts.ENV_TOKEN: "/nonexistent/token"}, id="no-token-file"),
        pytest.param({ts.ENV_CA_CERT: "WRONG-CA"}, id="another-ca"),
    ],
)
def test_it_never_raises(
    server: Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, change: dict[str, str]
) -> None:
    for k, v in change.items():
        if v == "WRONG-CA":
            v = str(statusserver.credentials(tmp_path / "other").ca_file)
        monkeypatch.setenv(k, v)
    assert trainjob.update_trainjob_status(progress_percent=5, metrics={"x": object()}) is False  # type: ignore[dict-item]
    assert server.updates == []


def test_a_kept_alive_connection_the_server_dropped_is_reopened(server: Server) -> None:
    assert trainjob.update_trainjob_status(progress_percent=1)
    assert progress._conn is not None
    progress._conn.sock.close()  # as an idle timeout would
    progress._last_update = 0.0
    assert trainjob.update_trainjob_status(progress_percent=2)
    assert len(server.updates) == 2


def test_the_unthrottled_update_is_sent_while_the_public_one_is_throttled(server: Server) -> None:
    assert trainjob.update_trainjob_status(progress_percent=1)
    assert trainjob.update_trainjob_status(progress_percent=2) is False  # within 5 s
    assert progress.update_unthrottled(progress_percent=100, estimated_remaining_seconds=0)
    assert [u["progressPercentage"] for u in server.updates] == [1, 100]
    assert server.updates[-1]["estimatedRemainingSeconds"] == 0
    # it counts for the throttle: the public helper is throttled from it, as upstream's is
    assert trainjob.update_trainjob_status(progress_percent=3) is False
    progress._last_update -= ts.MIN_UPDATE_INTERVAL_SECONDS
    assert trainjob.update_trainjob_status(progress_percent=4)
    assert [u["progressPercentage"] for u in server.updates] == [1, 100, 4]


def test_the_unthrottled_update_keeps_the_helpers_other_rules(
    server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert progress.update_unthrottled(progress_percent=150, metrics={"loss": 0.25})
    [got] = server.updates
    assert got["progressPercentage"] == 100 and got["metrics"] == [
        {"name": "loss", "value": "0.25"}
    ]
    monkeypatch.setenv(ts.ENV_TOKEN, "/nonexistent/token")
    progress._reset()
    assert progress.update_unthrottled(progress_percent=5) is False  # never raises
    monkeypatch.delenv(ts.ENV_SERVER_URL)
    assert progress.update_unthrottled(progress_percent=5) is False  # outside a TrainJob
    assert len(server.updates) == 1


def test_the_newest_throttled_call_is_sent_at_exit_with_the_time_it_was_made(
    server: Server,
) -> None:
    assert trainjob.update_trainjob_status(progress_percent=10, metrics={"step": 1})
    assert not trainjob.update_trainjob_status(progress_percent=50, metrics={"step": 5})
    assert not trainjob.update_trainjob_status(progress_percent=100, metrics={"step": 10})
    assert len(server.updates) == 1
    progress._send_held()  # what atexit runs
    assert [u["progressPercentage"] for u in server.updates] == [10, 100]
    assert server.updates[-1]["metrics"] == [{"name": "step", "value": "10"}]
    assert server.updates[-1]["lastUpdatedTime"] >= server.updates[0]["lastUpdatedTime"]
    progress._send_held()  # sent once
    assert len(server.updates) == 2


def test_nothing_is_sent_at_exit_when_the_last_call_was_accepted(server: Server) -> None:
    assert trainjob.update_trainjob_status(progress_percent=10)
    assert not trainjob.update_trainjob_status(progress_percent=50)
    assert progress.update_unthrottled(progress_percent=100)  # the built-in trainer's last
    progress._send_held()
    assert [u["progressPercentage"] for u in server.updates] == [10, 100]


def test_a_process_that_exits_right_after_its_last_call_still_sends_it(server: Server) -> None:
    """The throttle would drop a last report made within 5 s of the one before; the process's
    exit sends it (a custom trainer's job then ends at 100 %, not at its last 5 s mark)."""
    import os
    import subprocess
    import sys

    script = (
        "import trainjob\n"
        "for step in range(1, 11):\n"
        "    trainjob.update_trainjob_status(progress_percent=10 * step, metrics={'step': step})\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], env=dict(os.environ), capture_output=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    assert [u["progressPercentage"] for u in server.updates] == [10, 100]
    assert server.updates[-1]["metrics"] == [{"name": "step", "value": "10"}]
