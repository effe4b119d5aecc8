"""Names JobSet would refuse are refused by the SDK on the local backend before anything is
stored or run, with the webhook's lines (issue 28): a TrainJob name whose pods' names would
pass 63 characters, and a runtime whose replicatedJob name is no DNS-1035 label.

On a cluster the same lines come from the admission webhooks
(``tests/integration/test_webhooks.py``); ``plan`` and ``run`` give them too (``tests/unit/corpus``).
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from trainjob import CustomTrainer, TrainerClient
from trainjob.api.load import parse
from trainjob.client.config import LocalProcessBackendConfig
from trainjob.client.options import Name
from trainjob.errors import InvalidError

RUNTIME: dict[str, Any] = {
    "apiVersion": "trainer.kubeflow.org/v1alpha1",
    "kind": "TrainingRuntime",
    "metadata": {"name": "plain", "namespace": "default"},
    "spec": {
        "mlPolicy": {"numNodes": 1},
        "template": {
            "spec": {
                "replicatedJobs": [
                    {
                        "name": "node",
                        "template": {
                            "metadata": {
                                "labels": {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}
                            },
                            "spec": {
                                "template": {
                                    "spec": {
                                        "containers": [{"name": "node", "image": "python:3.12"}]
                                    }
                                }
                            },
                        },
                    }
                ]
            }
        },
    },
}


def train_fn() -> None:
    print("trained")


@pytest.fixture
def client(tmp_path: Path) -> TrainerClient:
    return TrainerClient(LocalProcessBackendConfig(home=tmp_path / "home"))


def test_a_name_whose_pod_names_pass_63_characters_is_refused_before_anything_runs(
    client: TrainerClient,
) -> None:
    name = "n" * 50  # <name>-node-0-0-<5 random characters> is 65
    with pytest.raises(ValueError) as caught:
        client.train(
            runtime="torch-distributed", trainer=CustomTrainer(func=train_fn), options=[Name(name)]
        )
    assert str(caught.value) == (
        f'TrainJob.trainer.kubeflow.org "{name}" is invalid: metadata.name: Invalid value: '
        f'"{name}": JobSet name is too long, pod names generated for this JobSet will exceed 63 '
        f'characters (replicatedJob "node": pod "{name}-node-0-0-xxxxx", 65 characters): '
        "shorten the TrainJob's name"
    )
    assert client.list_jobs() == []


@pytest.mark.parametrize(
    ("job_name", "problem"),
    [
        pytest.param("Node_1", "a DNS-1035 label must consist of", id="not a DNS-1035 label"),
        pytest.param("n" * 64, "must be no more than 63 characters", id="over 63 characters"),
    ],
)
def test_a_runtime_whose_replicated_job_name_jobset_refuses_is_not_stored(
    client: TrainerClient, job_name: str, problem: str
) -> None:
    rt = copy.deepcopy(RUNTIME)
    rt["spec"]["template"]["spec"]["replicatedJobs"][0]["name"] = job_name
    executor = client.backend.executor  # type: ignore[attr-defined]
    with pytest.raises(InvalidError) as caught:
        executor.apply_runtime(parse(rt))
    assert str(caught.value).startswith(
        'TrainingRuntime.trainer.kubeflow.org "plain" is invalid: '
        f'spec.template.spec.replicatedJobs[0].name: Invalid value: "{job_name}": {problem}'
    )
    assert "plain" not in [r.name for r in client.list_runtimes()]
