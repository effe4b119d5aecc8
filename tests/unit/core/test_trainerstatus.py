"""The status endpoint's protocol: upstream's names, and a request body checked by the CRD's
rules (which both status servers apply before anything is written)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from trainjob.api import crd_rules, trainer
from trainjob.core import trainerstatus as ts

NOW = "2026-01-02T03:04:05.678901+00:00"


def body(**status: Any) -> bytes:
    return json.dumps({"trainerStatus": {"lastUpdatedTime": NOW, **status}}).encode()


def test_names_are_upstreams() -> None:
    assert ts.path("ns", "job") == (
        "/apis/trainer.kubeflow.org/v1alpha1/namespaces/ns/trainjobs/job/status"
    )
    assert (
        ts.audience("ns", "job")
        == "trainer.kubeflow.org/v1alpha1/namespaces/ns/trainjobs/job/status"
    )
    assert ts.parse_path(ts.path("ns", "job")) == ("ns", "job")
    assert ts.parse_path(ts.path("ns", "job") + "/more") is None
    assert ts.CA_ANNOTATION == "trainer.kubeflow.org/status-server-ca"


def test_the_limits_are_the_crds() -> None:
    rules = crd_rules.SCHEMA
    status_rules = rules[trainer.TrainerStatus]
    assert status_rules["progressPercentage"]["maximum"] == 100
    assert status_rules["metrics"]["maxItems"] == ts.MAX_METRICS
    assert rules[trainer.Metric]["name"]["maxLength"] == ts.MAX_METRIC_LENGTH
    assert rules[trainer.Metric]["value"]["maxLength"] == ts.MAX_METRIC_LENGTH


def test_a_good_body_is_normalised() -> None:
    got = ts.parse_request(
        body(
            progressPercentage=50,
            estimatedRemainingSeconds=30.0,
            metrics=[{"name": "loss", "value": "1.5"}],
            extra=1,
        )
    )
    assert got == {
        "progressPercentage": 50,
        "estimatedRemainingSeconds": 30,
        "metrics": [{"name": "loss", "value": "1.5"}],
        "lastUpdatedTime": "2026-01-02T03:04:05Z",
    }


def test_a_body_without_trainer_status_changes_nothing() -> None:
    assert ts.parse_request(b"{}") is None
    assert ts.parse_request(b'{"trainerStatus": null}') is None


@pytest.mark.parametrize(
    ("raw", "code", "says"),
    [
        (b"not json", 422, "Invalid payload"),
        (b"[1]", 422, "Invalid payload"),
        (b'{"trainerStatus": 3}', 422, "Invalid payload"),
        (body(progressPercentage=101), 422, ".progressPercentage: Invalid value: 101"),
        (body(progressPercentage=-1), 422, "greater than or equal to 0"),
        (body(progressPercentage=1.5), 422, "must be an integer"),
        (body(progressPercentage=True), 422, "must be an integer"),
        (body(estimatedRemainingSeconds=2**31), 422, "less than or equal to 2147483647"),
        (body(metrics=[{"name": "x", "value": 1}]), 422, ".metrics[0].value"),
        (body(metrics=[{"name": "", "value": "1"}]), 422, ".metrics[0].name"),
        (body(metrics=[{"name": "x" * 65, "value": "1"}]), 422, "more than 64 bytes"),
        (body(metrics=[{"name": f"m{i}", "value": "1"} for i in range(257)]), 422, "at most 256"),
        (body(metrics="loss"), 422, "must be a list"),
        (b'{"trainerStatus": {"progressPercentage": 5}}', 422, "lastUpdatedTime is required"),
        (body(lastUpdatedTime="yesterday"), 422, "RFC 3339"),
        (b"{" + b" " * ts.MAX_BODY + b"}", 413, "Payload too large"),
    ],
)
def test_a_bad_body_is_refused_naming_the_field(raw: bytes, code: int, says: str) -> None:
    with pytest.raises(ts.RequestError) as e:
        ts.parse_request(raw)
    assert e.value.code == code and says in e.value.message
    status = json.loads(e.value.body())
    assert status["status"] == "Failure" and status["code"] == code and status["reason"]


def test_bearer_takes_exactly_one_credential() -> None:
    assert ts.bearer("Bearer abc") == "abc"
    assert ts.bearer("bearer   abc ") == "abc"
    assert ts.bearer("Basic abc") == ""
    assert ts.bearer("Bearer a b") == ""
    assert ts.bearer(None) == ""
