"""The registry of Plan kinds: each plugin declares its kinds, and every executor reads it."""

from __future__ import annotations

from typing import Any

import pytest

from trainjob.controller import rbac
from trainjob.core.resources import Resource
from trainjob.runtime import kinds, registry
from trainjob.runtime.framework import Framework
from trainjob.runtime.plugins import jobset as jobset_plugin
from trainjob.runtime.registry import framework


def test_every_kind_a_builtin_plugin_plans_is_declared_once_jobset_first() -> None:
    got = registry.kinds()
    assert list(got) == [k.key for k in kinds.BUILTIN]
    assert got[("jobset.x-k8s.io/v1alpha2", "JobSet")].apply is kinds.Apply.WHILE_SUSPENDED
    assert got[("v1", "Secret")].apply is kinds.Apply.CREATE_ONCE
    assert got[("v1", "Secret")].watch is kinds.Watch.METADATA  # never a Secret's data


def test_of_names_the_kind_of_a_plan_object_and_refuses_an_undeclared_one() -> None:
    assert registry.kind_of({"apiVersion": "v1", "kind": "ConfigMap"}) is kinds.CONFIGMAP
    with pytest.raises(KeyError):
        registry.kind_of({"apiVersion": "example.com/v1", "kind": "Widget"})


def test_two_plugins_declaring_one_kind_differently_is_an_error() -> None:
    class A:
        name = "A"

        def kinds(self) -> tuple[kinds.Kind, ...]:
            return (kinds.SECRET,)

    class B(A):
        name = "B"

        def kinds(self) -> tuple[kinds.Kind, ...]:
            return (
                kinds.Kind(
                    kinds.SECRET.resource,
                    kinds.Apply.ALWAYS,
                    kinds.Watch.FULL,
                    ("get",),
                    kinds.Local.SKIP,
                ),
            )

    assert kinds.collect([A(), A()]) == {kinds.SECRET.key: kinds.SECRET}
    with pytest.raises(ValueError, match="twice, differently"):
        kinds.collect([A(), B()])


def test_a_new_plugin_kind_brings_its_rbac_rule(monkeypatch: pytest.MonkeyPatch) -> None:
    widget = kinds.Kind(
        Resource("example.com", "v1", "widgets", "Widget"),
        kinds.Apply.ALWAYS,
        kinds.Watch.METADATA,
        ("list", "watch", "patch"),
        kinds.Local.SKIP,
        "widgets",
    )
    declared = {**registry.kinds(), widget.key: widget}
    monkeypatch.setattr(registry, "kinds", lambda: declared)
    rules = [r.to_dict() for r in rbac.plan_rules()]
    assert {
        "apiGroups": ["example.com"],
        "resources": ["widgets"],
        "verbs": ["list", "watch", "patch"],
    } in rules
    # the two PodGroup kinds, one plural with the same verbs, share a rule
    assert {
        "apiGroups": ["scheduling.x-k8s.io", "scheduling.volcano.sh"],
        "resources": ["podgroups"],
        "verbs": ["list", "watch", "create", "patch"],
    } in rules


def owned(uid: str) -> dict[str, Any]:
    return {"metadata": {"ownerReferences": [{"controller": True, "uid": uid}]}}


def test_the_jobset_plugin_is_the_one_status_plugin() -> None:
    fwk = framework()
    assert fwk.status is not None and fwk.status.name == jobset_plugin.NAME
    tj = {"metadata": {"name": "tj", "uid": "u1"}}
    js = {
        **owned("u1"),
        "status": {
            "conditions": [{"type": "Completed", "status": "True", "reason": "AllJobsCompleted"}],
            "replicatedJobsStatus": [{"name": "node", "succeeded": 2}],
        },
    }
    conds: list[dict[str, Any]] = []
    jobs = fwk.trainjob_status(tj, {kinds.JOBSET.key: js}, conds)
    assert [(c["type"], c["reason"]) for c in conds] == [("Complete", "AllJobsCompleted")]
    assert jobs and jobs[0]["succeeded"] == 2
    # another TrainJob's JobSet of that name is not read
    assert fwk.trainjob_status(tj, {kinds.JOBSET.key: {**js, **owned("u2")}}, []) is None
    assert fwk.terminal_cleanup(tj) == [(kinds.JOBSET, "tj")]


def test_a_second_status_plugin_is_a_construction_error() -> None:
    with pytest.raises(ValueError, match="only one TrainJobStatusPlugin"):
        Framework.new([jobset_plugin.JobSet(), jobset_plugin.JobSet()])
