"""The dashboard's app through the ASGI test client, over a real local store (jobs written as a
run leaves them, tests/stored_jobs.py): the Jobs rows with progress, ETA and loss, a job's page
data, its log as server-sent events, YAML and Plans, runtimes, delete, and the errors."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from tests.stored_jobs import store_job, trainer_status
from trainjob.dashboard.app import create_app
from trainjob.local.client.executor import LocalExecutor


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


@pytest.fixture
def ex(home: Path) -> LocalExecutor:
    return LocalExecutor(home)


@pytest.fixture
def client(home: Path, ex: LocalExecutor) -> Iterator[TestClient]:
    app = create_app(lambda: LocalExecutor(home), poll=0.05)
    with TestClient(app, base_url="http://127.0.0.1:8090") as c:
        yield c


def sse(body: str) -> list[tuple[str, Any]]:
    """The (event, data) pairs of a server-sent event stream's text."""
    out = []
    for block in body.split("\n\n"):
        name, data = "", None
        for line in block.splitlines():
            if line.startswith("event: "):
                name = line[7:]
            elif line.startswith("data: "):
                data = json.loads(line[6:])
        if name:
            out.append((name, data))
    return out


def first_events(client: TestClient, path: str, n: int) -> list[tuple[str, Any]]:
    """The first ``n`` events of an endless stream (then the client hangs up)."""
    got: list[tuple[str, Any]] = []
    with client.stream("GET", path) as r:
        assert r.status_code == 200
        assert r.headers["content-type"].startswith("text/event-stream")
        buf = ""
        for chunk in r.iter_text():
            buf += chunk
            *done, buf = buf.split("\n\n")
            for block in done:
                got += sse(block + "\n\n")
            if len(got) >= n:
                return got
    return got


def test_jobs_rows_carry_progress_eta_loss(client: TestClient, ex: LocalExecutor) -> None:
    status = {"trainerStatus": trainer_status(40, 75, {"loss": "0.731", "lr": "1e-4"})}
    store_job(ex, "tune", "team-a", phase="Complete", status=status, restarts=1, nodes=2)
    store_job(ex, "other", "team-b", phase="Failed", runtime="mpi-distributed", nodes=1)
    body = client.get("/api/jobs").json()
    assert body["backend"] == "local"
    rows = {r["name"]: r for r in body["jobs"]}
    assert rows["tune"] | {"created": None, "started": None, "completed": None} == {
        "namespace": "team-a",
        "name": "tune",
        "runtime": "torch-distributed",
        "phase": "Complete",
        "reason": "AllJobsCompleted",
        "progress": 40,
        "eta": 75,
        "loss": "0.731",
        "nodes": 2,
        "restarts": 1,
        "created": None,
        "started": None,
        "completed": None,
    }
    assert rows["other"]["phase"] == "Failed" and rows["other"]["progress"] is None
    only_b = client.get("/api/jobs?namespace=team-b").json()["jobs"]
    assert [r["name"] for r in only_b] == ["other"]


def test_jobs_stream_snapshot_then_changes(client: TestClient, ex: LocalExecutor) -> None:
    store_job(ex, "first")
    with client.stream("GET", "/api/jobs/stream") as r:
        lines = r.iter_lines()
        events: list[tuple[str, Any]] = []
        buf: list[str] = []
        for line in lines:
            if line:
                buf.append(line)
                continue
            events += sse("\n".join(buf) + "\n\n")
            buf = []
            if len(events) == 1:
                assert events[0][0] == "snapshot"
                assert [j["name"] for j in events[0][1]["jobs"]] == ["first"]
                store_job(ex, "second")  # appears without a reload
            elif len(events) == 2:
                assert events[1][0] == "changed"
                assert [j["name"] for j in events[1][1]["jobs"]] == ["second"]
                ex.delete("first")
            elif len(events) == 3:
                assert events[2][1]["removed"] == [["default", "first"]]
                break


def test_job_detail(client: TestClient, ex: LocalExecutor) -> None:
    store_job(
        ex,
        "tune",
        status={"trainerStatus": trainer_status(100, 0, {"loss": "0.2", "phase": "done"})},
        events=[("Warning", "BackoffLimitExceeded", "node-1 <b>exited</b> 1")],
    )
    j = client.get("/api/jobs/default/tune").json()["job"]
    assert j["phase"] == "Complete"
    assert [c["type"] for c in j["conditions"]] == ["Complete"]
    assert [p["step"] for p in j["pods"]] == ["node-0", "node-1"]
    assert j["pods"][0]["exitCode"] == 0 and j["pods"][0]["logs"] is True
    assert j["events"][0]["message"] == "node-1 <b>exited</b> 1"  # data, not markup
    assert j["progressDetail"]["metrics"] == {"loss": "0.2", "phase": "done"}
    assert j["logLocation"].endswith("jobs/default/tune/logs")
    assert j["outputs"] == []  # none kept: no volume of the job asked to outlive it


def test_unknown_job_is_a_404_naming_it(client: TestClient) -> None:
    r = client.get("/api/jobs/default/nope")
    assert r.status_code == 404
    assert "nope" in r.json()["error"]
    assert client.get("/api/jobs/default/nope/stream").status_code == 404


def test_metrics_are_the_executors_history(client: TestClient, ex: LocalExecutor) -> None:
    status = {"trainerStatus": trainer_status(50, 9, {"loss": "0.5", "step": "10", "note": "x"})}
    store_job(ex, "tune", status=status)
    body = client.get("/api/jobs/default/tune/metrics").json()
    want = [s.metrics for s in ex.metric_history("tune", "default")]
    assert [p["values"] for p in body["points"]] == [
        {k: float(v) for k, v in m.items() if k != "note"} for m in want
    ]
    assert body["points"][-1]["values"]["loss"] == 0.5


def test_job_stream_sends_detail_and_metrics(client: TestClient, ex: LocalExecutor) -> None:
    status = {"trainerStatus": trainer_status(10, 90, {"loss": "2.5"})}
    store_job(ex, "tune", status=status)
    events = first_events(client, "/api/jobs/default/tune/stream", 2)
    assert [e[0] for e in events] == ["detail", "metrics"]
    assert events[0][1]["job"]["name"] == "tune"
    assert events[1][1]["points"][0]["values"] == {"loss": 2.5}


def test_logs_as_events_then_end(client: TestClient, ex: LocalExecutor) -> None:
    lines = [f"step {i} loss {1 / (i + 1):.3f}" for i in range(1200)] + ["<img src=x onerror=1>"]
    store_job(ex, "tune", logs={"node-1": lines})
    r = client.get("/api/jobs/default/tune/logs?step=node-1&follow=1")
    events = sse(r.text)
    assert events[-1][0] == "end"
    got = [line for name, d in events if name == "lines" for line in d["lines"]]
    assert got == lines
    assert max(len(d["lines"]) for name, d in events if name == "lines") <= 500


def test_logs_of_an_unknown_step(client: TestClient, ex: LocalExecutor) -> None:
    store_job(ex, "tune")
    events = sse(client.get("/api/jobs/default/tune/logs?step=node-7").text)
    assert events[0][0] == "failed"
    assert "node-7" in events[0][1]["message"] and "node-0, node-1" in events[0][1]["message"]


def test_yaml_and_plan(client: TestClient, ex: LocalExecutor) -> None:
    store_job(ex, "tune")
    y = client.get("/api/jobs/default/tune/yaml")
    assert y.headers["content-type"].startswith("text/plain")
    assert "kind: TrainJob" in y.text and "name: tune" in y.text
    plan = client.get("/api/jobs/default/tune/plan").text
    assert "kind: JobSet" in plan and "name: tune" in plan


def test_runtimes_and_their_plan(client: TestClient) -> None:
    rts = {r["name"]: r for r in client.get("/api/runtimes").json()["runtimes"]}
    torch = rts["torch-distributed"]
    assert torch["kind"] == "ClusterTrainingRuntime"
    assert torch["framework"] == "torch"
    assert "torch" in torch["mlPolicy"]
    assert [s["name"] for s in torch["steps"]] == ["node"]
    base = "/api/runtimes/ClusterTrainingRuntime/torch-distributed"
    assert "kind: ClusterTrainingRuntime" in client.get(base + "/yaml").text
    plan = client.get(base + "/plan?numNodes=3").text
    assert "kind: JobSet" in plan and "parallelism: 3" in plan
    bad = client.get(base + "/plan?numNodes=x")
    assert bad.status_code == 400 and "numNodes" in bad.json()["error"]
    missing = client.get("/api/runtimes/ClusterTrainingRuntime/nope/yaml")
    assert missing.status_code == 404 and "nope" in missing.json()["error"]


def test_delete_needs_the_action_header(client: TestClient, ex: LocalExecutor) -> None:
    store_job(ex, "tune")
    refused = client.delete("/api/jobs/default/tune")
    assert refused.status_code == 403
    assert ex.exists("tune", "default")
    ok = client.delete("/api/jobs/default/tune", headers={"X-Trainjob-Dashboard": "1"})
    assert ok.status_code == 200, ok.text
    assert ok.json()["message"] == "trainjob.trainer.kubeflow.org/tune deleted"
    assert not ex.exists("tune", "default")


def test_pages_are_static_with_a_strict_policy(client: TestClient, ex: LocalExecutor) -> None:
    store_job(ex, "tune", message="<script>alert(1)</script>")
    for path in ("/", "/jobs/default/tune", "/runtimes"):
        r = client.get(path)
        assert r.status_code == 200
        assert "alert" not in r.text  # no data in the HTML: the page's script sets it as text
        csp = r.headers["content-security-policy"]
        assert "script-src 'self'" in csp and "unsafe-inline" not in csp.split("style-src")[0]
        assert r.headers["x-content-type-options"] == "nosniff"
    js = client.get("/static/vendor/uPlot.iife.min.js")
    assert js.status_code == 200 and "uPlot" in js.text


def test_page_scripts_never_parse_html() -> None:
    """Every value reaches the DOM as text: no innerHTML, outerHTML, insertAdjacentHTML,
    document.write or eval in the dashboard's own scripts."""
    static = Path(__file__).parents[3] / "src/trainjob/dashboard/static"
    scripts = sorted(static.glob("*.js"))
    assert {p.name for p in scripts} == {
        "dashboard.js",
        "jobs.js",
        "job.js",
        "runtimes.js",
        "sweep.js",
    }
    for p in scripts:
        src = p.read_text()
        for bad in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval("):
            assert bad not in src, f"{p.name} uses {bad}"


class _StoreGoneAfterFirstLook(LocalExecutor):
    """A local executor whose store stops answering after the first listing (a test double for
    a store or cluster that goes away mid-stream)."""

    looks = 0

    def states(self, namespace: str | None = None, *, pods: bool = True) -> list[Any]:
        type(self).looks += 1
        if type(self).looks > 1:
            from trainjob.errors import ConfigError

            raise ConfigError("cannot read the job store: disk I/O error")
        return super().states(namespace, pods=pods)


def test_a_stream_says_when_a_look_fails_and_goes_on(home: Path, ex: LocalExecutor) -> None:
    store_job(ex, "first")
    app = create_app(lambda: _StoreGoneAfterFirstLook(home), poll=0.05)
    with TestClient(app, base_url="http://127.0.0.1:8090") as c:
        events = first_events(c, "/api/jobs/stream", 3)
    assert [e[0] for e in events] == ["snapshot", "failed", "failed"]
    assert events[1][1]["message"] == "cannot read the job store: disk I/O error"
