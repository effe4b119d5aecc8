"""The OptimizerClient's side before anything runs: the OptimizationJob ``optimize`` makes from
the Kubeflow SDK's arguments, the trial function's call line with ``{{.name}}`` placeholders,
and the Katib stdout collector shipped with it (run in a real interpreter against a loopback
HTTP server)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import pytest

import trainjob.optimizer as public
from trainjob import CustomTrainer, LocalBackendConfig, TrainJobTemplate
from trainjob.api.optimization import parse_optimization_job
from trainjob.client import function
from trainjob.optimizer import (
    GridSearch,
    MedianStopping,
    Objective,
    OptimizerClient,
    RandomSearch,
    Search,
    TPESearch,
    TrialConfig,
)


def train(lr: float, optimizer: str, batch: int, epochs: int = 1) -> None:
    print(lr, optimizer, batch, epochs)


@pytest.fixture
def client(tmp_path: Path) -> OptimizerClient:
    return OptimizerClient(LocalBackendConfig(home=tmp_path / "home", cwd=str(tmp_path)))


def manifest(client: OptimizerClient, **kw: Any) -> dict[str, Any]:
    args: dict[str, Any] = {
        "trial_config": TrialConfig(num_trials=4, parallel_trials=2, max_failed_trials=1),
        "search_space": {
            "lr": Search.loguniform(0.001, 0.1),
            "optimizer": Search.choice(["sgd", "adam"]),
            "batch": Search.choice([16, 32]),
        },
        "objectives": None,
        "algorithm": None,
        "early_stopping": None,
    }
    args.update(kw)
    template = TrainJobTemplate(trainer=CustomTrainer(func=train, func_args={"epochs": 3}))
    out: dict[str, Any] = client._manifest(template, **args)
    return out


def test_upstreams_names_import_from_trainjob_optimizer() -> None:
    upstream = {
        "GridSearch", "KubernetesBackendConfig", "Objective", "OptimizationJob",
        "OptimizerClient", "RandomSearch", "Result", "Search", "TrainJobTemplate", "TrialConfig",
    }  # fmt: skip
    assert upstream <= set(public.__all__)
    assert all(getattr(public, name) is not None for name in public.__all__)


def test_optimize_makes_an_optimization_job_with_upstreams_fields(client: OptimizerClient) -> None:
    obj = manifest(
        client,
        objectives=[Objective(metric="accuracy", direction="maximize")],
        algorithm=TPESearch(random_state=3),
        early_stopping=MedianStopping(min_trials=2),
    )
    spec = obj["spec"]
    assert spec["objectives"] == [{"metric": "accuracy", "direction": "Maximize"}]
    assert spec["searchAlgorithm"] == {"tpe": {"seed": 3}}
    assert spec["parameters"][0] == {
        "name": "lr",
        "searchSpace": {"logUniform": {"min": "0.001", "max": "0.1", "type": "Float"}},
    }
    assert spec["parameters"][2]["searchSpace"] == {"categorical": {"choices": ["16", "32"]}}
    assert (spec["numTrials"], spec["parallelTrials"], spec["maxFailedTrials"]) == (4, 2, 1)
    assert spec["earlyStopping"] == {"median": {"minTrials": 2, "startStep": 1}}
    parse_optimization_job(obj)  # every parameter is used in the template
    script = " ".join(spec["trainJobTemplate"]["spec"]["trainer"]["command"])
    # numbers bare (they reach the function as numbers), strings quoted
    assert "{'epochs': 3, 'lr': {{.lr}}, 'optimizer': '{{.optimizer}}', 'batch': {{.batch}}}" in (
        script.replace("'\"'\"'", "'")
    )
    assert "_trainjob_collect_stdout_metrics()" in script


@pytest.mark.parametrize(
    ("algorithm", "want"),
    [
        pytest.param(None, {"random": {}}, id="random by default"),
        pytest.param(RandomSearch(random_state=1), {"random": {"seed": 1}}, id="seeded random"),
        pytest.param(GridSearch(), {"grid": {}}, id="grid"),
    ],
)
def test_each_algorithm_is_its_search_algorithm(
    client: OptimizerClient, algorithm: Any, want: dict[str, Any]
) -> None:
    assert manifest(client, algorithm=algorithm)["spec"]["searchAlgorithm"] == want


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        pytest.param({"search_space": {}}, "Search space must be set", id="no search space"),
        pytest.param(
            {"search_space": {"lr": Search.choice(["it's"])}}, "single quote", id="unsafe choice"
        ),
        pytest.param(
            {"objectives": [Objective(), Objective(metric="acc")]}, "exactly one", id="two goals"
        ),
        pytest.param({"search_space": {"lr": 0.1}}, "Search.uniform", id="not a search space"),
    ],
)
def test_bad_arguments_are_a_value_error_before_anything_is_made(
    client: OptimizerClient, kw: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        manifest(client, **kw)


def test_a_function_without_placeholders_has_no_collector() -> None:
    shipped = function.ship(train, {"lr": 0.1, "optimizer": "sgd", "batch": 1})
    assert "_trainjob_collect_stdout_metrics" not in shipped.script
    with pytest.raises(ValueError, match="no argument named 'nope'"):
        function.ship(train, {"nope": function.Placeholder("nope", True)})


class Reports(BaseHTTPRequestHandler):
    got: list[dict[str, Any]] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        assert self.headers["Authorization"] == "Bearer secret"
        Reports.got.append(json.loads(body)["trainerStatus"])
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def server() -> Iterator[str]:
    Reports.got = []
    srv = HTTPServer(("127.0.0.1", 0), Reports)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{srv.server_address[1]}/status"
    srv.shutdown()


def test_katib_style_lines_are_reported_as_metrics_in_order_the_last_at_exit(
    server: str, tmp_path: Path
) -> None:
    token = tmp_path / "token"
    token.write_text("secret\n")
    shipped = function.ship(
        train, {"lr": function.Placeholder("lr", True), "optimizer": "x", "batch": 1}
    )
    block = shipped.script[shipped.script.index("# trainjob: name=value") :].split("\ntrain(")[0]
    code = block + (
        "\nprint('epoch=1 loss=0.5 accuracy=0.7')\nprint('nothing here')\n"
        "print('epoch=2 loss=2.5e-1')\nimport sys; sys.stdout.write('loss=.125')\n"
    )
    env = dict(os.environ, KUBEFLOW_TRAINER_SERVER_URL=server,
               KUBEFLOW_TRAINER_SERVER_TOKEN=str(token))  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert "epoch=1 loss=0.5 accuracy=0.7" in done.stdout and "nothing here" in done.stdout
    metrics = [{m["name"]: m["value"] for m in r["metrics"]} for r in Reports.got]
    assert metrics == [
        {"epoch": "1", "loss": "0.5", "accuracy": "0.7"},
        {"epoch": "2", "loss": "2.5e-1", "accuracy": "0.7"},
        {"epoch": "2", "loss": ".125", "accuracy": "0.7"},  # a last line without its newline
    ]
