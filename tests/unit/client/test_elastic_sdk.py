"""``CustomTrainer(num_nodes=ElasticPolicy(...))`` -> ``spec.trainer.elasticPolicy``, and the SDK's
own checks of an ElasticPolicy (before anything is submitted)."""

from __future__ import annotations

import pytest

from tests.unit.client import shippable as s
from tests.unit.client.test_builder import runtime
from trainjob import ElasticPolicy
from trainjob.client import builder, types


@pytest.mark.parametrize(
    "trainer",
    [
        pytest.param(
            types.CustomTrainer(
                func=s.train_no_args, num_nodes=ElasticPolicy(min_nodes=2, max_nodes=4)
            ),
            id="CustomTrainer",
        ),
        pytest.param(
            types.CustomTrainerContainer(image="img", num_nodes=ElasticPolicy(2, 4)),
            id="CustomTrainerContainer",
        ),
    ],
)
def test_an_elastic_policy_becomes_the_trainers_elastic_policy(trainer: object) -> None:
    job = builder.build(runtime(), trainer=trainer)  # type: ignore[arg-type]
    spec = job["spec"]["trainer"]
    assert spec["elasticPolicy"] == {"minNodes": 2, "maxNodes": 4}
    assert "numNodes" not in spec


def test_restarts_and_metrics_are_passed_on() -> None:
    metric = {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization"}}}
    policy = ElasticPolicy(min_nodes=1, max_nodes=3, max_restarts=7, metrics=[metric])
    job = builder.build(
        runtime(), trainer=types.CustomTrainer(func=s.train_no_args, num_nodes=policy)
    )
    assert job["spec"]["trainer"]["elasticPolicy"] == {
        "minNodes": 1,
        "maxNodes": 3,
        "maxRestarts": 7,
        "metrics": [metric],
    }


@pytest.mark.parametrize(
    ("policy", "want"),
    [
        pytest.param(
            ElasticPolicy(3, 2),
            "ElasticPolicy max_nodes (2) must be greater than or equal to min_nodes (3)",
            id="max below min",
        ),
        pytest.param(
            ElasticPolicy(0, 2), "ElasticPolicy min_nodes must be a positive integer, got 0", id="0"
        ),
        pytest.param(
            ElasticPolicy(1, 2, max_restarts=-1),
            "ElasticPolicy max_restarts must be a non-negative integer, got -1",
            id="negative restarts",
        ),
    ],
)
def test_a_bad_policy_is_refused_with_its_field(policy: ElasticPolicy, want: str) -> None:
    with pytest.raises(ValueError, match=want.replace("(", r"\(").replace(")", r"\)")):
        builder.build(
            runtime(), trainer=types.CustomTrainer(func=s.train_no_args, num_nodes=policy)
        )
