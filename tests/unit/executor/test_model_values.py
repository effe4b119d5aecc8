"""The job model's values behave as the frozen dataclasses they replaced (executor/model.py:
plain classes and named tuples, for the CLI's start-up): equal by their compared fields,
hashable, unchangeable, copied with ``replace``, pickled and copied whole, shown by repr."""

from __future__ import annotations

import copy
import pickle

import pytest

from trainjob.errors import ErrorType, FieldError
from trainjob.executor.model import JobState, MetricSample, PodState


def _pod(**kw: object) -> PodState:
    return PodState("node", 0, "j-node-0-0", "Running", **kw)  # type: ignore[arg-type]


def test_pods_compare_without_their_resources_and_env() -> None:
    a = _pod(resources={"limits": {"cpu": "1"}}, env={"A": "1"})
    b = _pod()
    assert a == b and hash(a) == hash(b)
    assert a != _pod(restarts=1)
    assert "resources" not in repr(a) and repr(b).startswith("PodState(job='node', index=0, ")
    assert b.resources == {} and b.env == {}


def test_jobs_compare_without_their_trainjob_and_summary() -> None:
    pods = (_pod(),)
    a = JobState("j", "ns", "Running", "t", pods=pods, trainjob={"spec": {}})
    assert a == JobState("j", "ns", "Running", "t", pods=pods)
    assert a != JobState("j", "ns", "Running", "t")
    assert len({a, JobState("j", "ns", "Running", "t", pods=pods)}) == 1
    assert "trainjob" not in repr(a)


def test_values_are_frozen_and_replace_copies() -> None:
    s = JobState("j", "ns", "Running", "t", trainjob={"spec": {"trainer": {"numNodes": 2}}})
    with pytest.raises(AttributeError, match="frozen"):
        s.phase = "Failed"
    with pytest.raises(AttributeError, match="frozen"):
        del s.phase
    t = s.replace(phase="Failed", pods=())
    assert (t.phase, s.phase, t.trainjob, t.num_nodes) == ("Failed", "Running", s.trainjob, 2)
    with pytest.raises(TypeError, match="no field colour"):
        s.replace(colour="red")


def test_values_pickle_and_copy_whole() -> None:
    s = JobState("j", "ns", "Failed", "t", reason="R", pods=(_pod(env={"A": "1"}),))
    for again in (pickle.loads(pickle.dumps(s)), copy.deepcopy(s), copy.copy(s)):
        assert again == s and again.pods[0].env == {"A": "1"}
    fe = FieldError.invalid("spec.trainer.numNodes", {"b": 1, "a": 2}, "must be >= 1")
    assert pickle.loads(pickle.dumps(fe)) == fe and copy.deepcopy(fe) == fe


def test_field_errors_compare_hash_and_stay_frozen() -> None:
    fe = FieldError(ErrorType.REQUIRED, "spec.runtimeRef.name")
    assert fe == FieldError.required("spec.runtimeRef.name")
    assert hash(fe) == hash(FieldError.required("spec.runtimeRef.name"))
    assert fe != FieldError.required("spec.trainer")
    assert repr(fe).startswith("FieldError(type=<ErrorType.REQUIRED: 'Required value'>, ")
    with pytest.raises(AttributeError, match="frozen"):
        fe.detail = "x"


def test_a_sample_without_metrics_has_an_empty_mapping() -> None:
    sample = MetricSample("2026-01-01T00:00:00Z")
    assert dict(sample.metrics) == {} and sample.loss is None
    assert MetricSample("t", {"loss": "0.5"}).number("loss") == 0.5
