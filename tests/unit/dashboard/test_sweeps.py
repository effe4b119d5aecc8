"""The dashboard's sweeps through the ASGI test client, over a real local store (a finished
OptimizationJob and its trial TrainJobs written as its supervisor leaves them,
tests/stored_jobs.py) and the real LocalSweepExecutor: the Jobs page's sweep rows, a sweep's page
data (its search, result, every trial with its parameters and objective), a trial's link back,
the sweep page's route, the errors; and a dashboard without sweeps."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from tests.stored_jobs import store_sweep
from trainjob.dashboard.app import create_app
from trainjob.local.client.executor import LocalExecutor
from trainjob.local.client.sweeps import LocalSweepExecutor

TRIALS = [
    ({"lr": "0.1", "optimizer": "sgd"}, "0.8999999999999999", "Succeeded"),
    ({"lr": "0.01", "optimizer": "adam"}, "0.25", "Succeeded"),
    ({"lr": "0.001", "optimizer": "sgd"}, None, "Failed"),
]
PARAMETERS = [
    {"name": "lr", "searchSpace": {"logUniform": {"min": "1e-3", "max": "0.1"}}},
    {"name": "optimizer", "searchSpace": {"categorical": {"choices": ["sgd", "adam"]}}},
]


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


@pytest.fixture
def client(home: Path) -> Iterator[TestClient]:
    ex = LocalExecutor(home)
    store_sweep(ex, "tune", TRIALS, "team-a", parameters=PARAMETERS)
    app = create_app(
        lambda: LocalExecutor(home), sweeps=lambda: LocalSweepExecutor(home), poll=0.05
    )
    with TestClient(app, base_url="http://127.0.0.1:8090") as c:
        yield c


def test_sweep_rows_for_the_jobs_page(client: TestClient) -> None:
    body = client.get("/api/sweeps").json()
    assert body["backend"] == "local" and "unavailable" not in body
    (row,) = body["sweeps"]
    assert row | {"created": None} == {
        "namespace": "team-a",
        "name": "tune",
        "phase": "Complete",
        "reason": "AllTrialsFinished",
        "metric": "loss",
        "direction": "Minimize",
        "algorithm": "random (seed 7)",
        "trials": 3,
        "finished": 3,
        "numTrials": 3,
        "parallelTrials": 1,
        "best": "tune-1",
        "bestObjective": "0.25",
        "created": None,
    }
    assert client.get("/api/sweeps?namespace=team-b").json()["sweeps"] == []


def test_a_sweeps_page_data(client: TestClient) -> None:
    s = client.get("/api/sweeps/team-a/tune").json()["sweep"]
    assert s["parameters"] == [
        {"name": "lr", "kind": "logUniform", "type": "Float", "min": "1e-3", "max": "0.1"},
        {"name": "optimizer", "kind": "categorical", "choices": ["sgd", "adam"]},
    ]
    assert s["result"] == {
        "trainJobName": "tune-1",
        "parameters": {"lr": "0.01", "optimizer": "adam"},
    }
    assert [(t["name"], t["best"]) for t in s["trialList"]] == [
        ("tune-0", False),
        ("tune-1", True),
        ("tune-2", False),
    ]
    first, _, failed = s["trialList"]
    # The objective as the status says it, and as a number for sorting and plotting.
    assert first["objective"] == "0.8999999999999999"
    assert first["objectiveValue"] == pytest.approx(0.9)
    assert failed["objective"] is None and failed["objectiveValue"] is None
    assert failed["phase"] == "Failed" and failed["reason"] == "the trial's job failed"
    assert [c["type"] for c in s["conditions"]] == ["Complete"]
    assert s["earlyStopping"] is None and s["maxFailedTrials"] is None
    assert [e["reason"] for e in s["events"]] == ["TrialCreated"] * 3
    assert s["events"][0]["object"] == "optimizationjob/tune"


def test_a_trial_links_back_to_its_sweep(client: TestClient) -> None:
    assert client.get("/api/jobs/team-a/tune-1").json()["job"]["sweep"] == "tune"


def test_the_sweep_page_and_its_script(client: TestClient) -> None:
    page = client.get("/sweeps/team-a/tune")
    assert page.status_code == 200
    assert '<script src="/static/sweep.js" defer>' in page.text
    assert "tune" not in page.text.replace("trainjob", "")  # the data comes from the API
    assert client.get("/static/sweep.js").status_code == 200


def test_a_sweep_not_there_is_a_404(client: TestClient) -> None:
    r = client.get("/api/sweeps/team-a/nope")
    assert r.status_code == 404
    assert r.json()["error"] == 'optimizationjobs.trainer.kubeflow.org "nope" not found'


def test_a_dashboard_without_sweeps_lists_none_and_says_why(home: Path) -> None:
    from trainjob.errors import TrainJobError

    def refused() -> LocalSweepExecutor:
        raise TrainJobError("OptimizationJobs on a cluster are not in this trainjob yet")

    app = create_app(lambda: LocalExecutor(home), sweeps=refused)
    with TestClient(app, base_url="http://127.0.0.1:8090") as c:
        body = c.get("/api/sweeps").json()
        assert body["sweeps"] == []
        assert body["unavailable"] == "OptimizationJobs on a cluster are not in this trainjob yet"
        r = c.get("/api/sweeps/default/tune")
        assert r.status_code == 404 and "no sweeps here" in r.json()["error"]
        assert c.get("/api/jobs").status_code == 200  # the jobs all the same


def test_credentials_that_may_not_list_every_namespace_list_their_own(home: Path) -> None:
    """As on a cluster where the user may list only their context's namespace."""
    from trainjob.api.optimization import OptimizationJob
    from trainjob.errors import ForbiddenError

    store_sweep(LocalExecutor(home), "mine", TRIALS[:1])  # in "default", the context's own
    store_sweep(LocalExecutor(home), "theirs", TRIALS[:1], "team-b")

    class OwnNamespaceOnly(LocalSweepExecutor):
        def list(self, namespace: str | None = None) -> list[OptimizationJob]:
            if namespace is None:
                raise ForbiddenError(
                    "optimizationjobs is forbidden: cannot list at the cluster scope"
                )
            return super().list(namespace)

    app = create_app(lambda: LocalExecutor(home), sweeps=lambda: OwnNamespaceOnly(home))
    with TestClient(app, base_url="http://127.0.0.1:8090") as c:
        assert [r["name"] for r in c.get("/api/sweeps").json()["sweeps"]] == ["mine"]
        assert c.get("/api/sweeps?namespace=team-b").json()["sweeps"][0]["name"] == "theirs"
