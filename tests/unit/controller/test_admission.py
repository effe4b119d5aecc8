"""Admission webhooks without a cluster: the mutating TrainJob webhook, the runtime validators,
and the AdmissionReview/Status encoding. (The TrainJob validator reads runtimes from the cluster;
it is tested on the real apiserver in tests/integration/test_webhooks.py.)"""

from __future__ import annotations

import base64
import copy
import json
from typing import Any, cast

import pytest

from trainjob.api import validation
from trainjob.api.load import parse
from trainjob.api.trainer import TrainJob
from trainjob.controller.webhooks import admission
from trainjob.controller.webhooks.serving import configurations
from trainjob.errors import FieldError
from trainjob.kube.client import Client

Obj = dict[str, Any]
NOW = "2026-03-04T05:06:07Z"
EARLIER = "2026-01-01T00:00:00Z"

hooks = admission.Admission(cast(Client, None), clock=lambda: NOW)


def trainjob(**spec: Any) -> Obj:
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": "job", "namespace": "ns"},
        "spec": {"runtimeRef": {"name": "torch-distributed"}, **spec},
    }


def patch(manager: str, sa: str, time: str | None = None) -> Obj:
    p: Obj = {
        "manager": manager,
        "trainingRuntimeSpec": {
            "template": {
                "spec": {
                    "replicatedJobs": [
                        {
                            "name": "node",
                            "template": {
                                "spec": {"template": {"spec": {"serviceAccountName": sa}}}
                            },
                        }
                    ]
                }
            }
        },
    }
    if time:
        p["time"] = time
    return p


def mutate(obj: Obj, old: Obj | None = None) -> list[Obj]:
    req: Obj = {"operation": "UPDATE" if old else "CREATE", "object": obj}
    if old:
        req["oldObject"] = old
    verdict = hooks.mutate_trainjob(req)
    assert verdict.allowed
    return verdict.patch


def test_create_stamps_every_runtime_patch_without_a_time() -> None:
    ops = mutate(trainjob(runtimePatches=[patch("a.io/x", "sa"), patch("b.io/y", "sb", EARLIER)]))
    assert ops == [
        {
            "op": "add",
            "path": "/spec/runtimePatches",
            "value": [patch("a.io/x", "sa", NOW), patch("b.io/y", "sb", EARLIER)],
        }
    ]


def test_create_without_patches_changes_nothing() -> None:
    assert mutate(trainjob()) == []


@pytest.mark.parametrize(
    "spec",
    [
        {},
        {"trainer": {"numNodes": 2, "command": ["torchrun"]}, "suspend": True},
        {"initializer": {"dataset": {"storageUri": "hf://a/b"}}, "managedBy": "x"},
    ],
)
def test_the_defaulter_skipped_by_its_match_conditions_would_have_done_nothing(spec: Obj) -> None:
    """admission.MUTATE_TRAINJOB_WHEN skips a spec with none of these keys: on create and on
    update, the defaulter's answer for one is "no patch"."""
    keys = ("runtimePatches", *admission.LEGACY_FIELDS)
    assert all(f"'{k}'" in admission.MUTATE_TRAINJOB_WHEN for k in keys)
    obj = trainjob(**spec)
    assert not set(obj["spec"]) & set(keys)
    assert mutate(obj) == []
    assert mutate(obj, trainjob(runtimePatches=[patch("a.io/x", "sa", EARLIER)])) == []


def test_only_the_defaulter_has_match_conditions() -> None:
    mutating, validating = configurations(b"CA", url_base="https://127.0.0.1:9443")
    [defaulter] = mutating["webhooks"]
    assert defaulter["matchConditions"] == [
        {"name": "patches-or-legacy-fields", "expression": admission.MUTATE_TRAINJOB_WHEN}
    ]
    assert all("matchConditions" not in w for w in validating["webhooks"])


def test_update_keeps_the_time_of_an_unchanged_patch_and_stamps_a_changed_one() -> None:
    old = trainjob(runtimePatches=[patch("a.io/x", "sa", EARLIER), patch("b.io/y", "sb", EARLIER)])
    new = trainjob(runtimePatches=[patch("a.io/x", "sa"), patch("b.io/y", "CHANGED")])
    (op,) = mutate(new, old)
    assert [p["time"] for p in op["value"]] == [EARLIER, NOW]


def test_update_stamps_a_changed_patch_whatever_time_the_client_sent() -> None:
    """Upstream's defaulter (pkg/webhooks/trainjob_webhook.go): on update a patch whose content
    changed gets the admission time even when the client sent one (a client that edits a patch
    and keeps its old ``time`` would otherwise hide the change from whoever orders patches by
    time); an unchanged one gets the old object's time, whatever the client sent; a new manager's
    keeps the client's."""
    old = trainjob(
        runtimePatches=[
            patch("a.io/x", "sa", EARLIER),
            patch("b.io/y", "sb", EARLIER),
            patch("c.io/z", "sc"),
        ]
    )
    new = trainjob(
        runtimePatches=[
            patch("a.io/x", "CHANGED", EARLIER),
            patch("b.io/y", "sb", "2026-02-02T00:00:00Z"),
            patch("c.io/z", "sc", "2026-02-02T00:00:00Z"),
            patch("d.io/w", "sd", "2026-02-02T00:00:00Z"),
        ]
    )
    (op,) = mutate(new, old)
    assert [p.get("time") for p in op["value"]] == [NOW, EARLIER, None, "2026-02-02T00:00:00Z"]


def test_legacy_fields_become_runtime_patches_and_are_removed() -> None:
    obj = trainjob(
        labels={"team": "a"},
        podTemplateOverrides=[
            {"targetJobs": [{"name": "node"}], "spec": {"serviceAccountName": "legacy"}}
        ],
    )
    ops = mutate(obj)
    assert ops[0]["path"] == "/spec/runtimePatches"
    managers = [p["manager"] for p in ops[0]["value"]]
    assert managers == [
        "trainer.kubeflow.org/v2.0-metadata",
        "trainer.kubeflow.org/v2.1-pod-template-overrides",
    ]
    assert all(p["time"] == NOW for p in ops[0]["value"])
    assert ops[1:] == [
        {"op": "remove", "path": "/spec/labels"},
        {"op": "remove", "path": "/spec/podTemplateOverrides"},
    ]


def runtime(kind: str = "TrainingRuntime", labels: Obj | None = None, replicas: int = 1) -> Obj:
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": kind,
        "metadata": {"name": "rt", "namespace": "ns", "labels": labels or {}},
        "spec": {
            "mlPolicy": {"numNodes": 1, "torch": {}},
            "template": {
                "spec": {
                    "replicatedJobs": [
                        {
                            "name": "node",
                            "replicas": replicas,
                            "template": {
                                "metadata": {
                                    "labels": {
                                        "trainer.kubeflow.org/trainjob-ancestor-step": "trainer"
                                    }
                                },
                                "spec": {
                                    "template": {
                                        "spec": {"containers": [{"name": "node", "image": "x"}]}
                                    }
                                },
                            },
                        }
                    ]
                }
            },
        },
    }


def test_a_valid_runtime_is_allowed() -> None:
    verdict = hooks.validate_training_runtime({"operation": "CREATE", "object": runtime()})
    assert verdict.allowed and verdict.warnings == []


def test_an_ancestor_job_with_two_replicas_is_denied_with_upstreams_message() -> None:
    verdict = hooks.validate_training_runtime(
        {"operation": "CREATE", "object": runtime(replicas=2)}
    )
    assert not verdict.allowed
    assert verdict.status is not None
    assert verdict.status["code"] == 403 and verdict.status["reason"] == "Forbidden"
    assert verdict.status["message"] == (
        "spec.template.spec.replicatedJobs[0].replicas: Invalid value: 2: always must be 1"
    )
    assert verdict.status["details"]["causes"] == [
        {
            "reason": "FieldValueInvalid",
            "message": "Invalid value: 2: always must be 1",
            "field": "spec.template.spec.replicatedJobs[0].replicas",
        }
    ]


def test_a_replicated_job_name_that_is_no_dns1035_label_is_denied() -> None:
    """JobSet names each Job ``<jobset>-<replicatedJob>-<index>`` and refuses one that is no
    DNS-1035 label; the runtime webhook refuses the runtime, so no TrainJob is made for it."""
    obj = runtime()
    obj["spec"]["template"]["spec"]["replicatedJobs"][0]["name"] = "Node_1"
    verdict = hooks.validate_training_runtime({"operation": "CREATE", "object": obj})
    assert not verdict.allowed and verdict.status is not None
    assert verdict.status["message"] == (
        'spec.template.spec.replicatedJobs[0].name: Invalid value: "Node_1": a DNS-1035 label '
        "must consist of lower case alphanumeric characters or '-', start with an alphabetic "
        "character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex "
        "used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
    )
    obj["spec"]["template"]["spec"]["replicatedJobs"][0]["name"] = "n" * 64
    verdict = hooks.validate_training_runtime({"operation": "CREATE", "object": obj})
    assert not verdict.allowed and verdict.status is not None
    assert verdict.status["message"] == (
        f'spec.template.spec.replicatedJobs[0].name: Invalid value: "{"n" * 64}": '
        "must be no more than 63 characters"
    )


def test_a_trainjob_whose_pod_names_would_pass_63_characters_is_denied() -> None:
    """A TrainJob name of 50 characters is valid alone, but JobSet's pods
    ``<name>-node-0-0-<5 random>`` would be 65: JobSet would refuse the JobSet at every
    reconcile, so the TrainJob webhook refuses the TrainJob (as plan and the local backend do)."""
    rt = runtime()
    with_cache = admission.Admission(
        cast(Client, None), clock=lambda: NOW, cached_runtime=lambda *_: rt
    )
    tj = trainjob()
    tj["spec"]["runtimeRef"] = {"name": "rt", "kind": "TrainingRuntime"}
    tj["metadata"]["name"] = "n" * 50
    verdict = with_cache.validate_trainjob({"operation": "CREATE", "object": tj})
    assert not verdict.allowed and verdict.status is not None
    assert verdict.status["message"] == (
        f'metadata.name: Invalid value: "{"n" * 50}": JobSet name is too long, pod names '
        'generated for this JobSet will exceed 63 characters (replicatedJob "node": pod '
        f'"{"n" * 50}-node-0-0-xxxxx", 65 characters): shorten the TrainJob\'s name'
    )
    tj["metadata"]["name"] = "n" * 48
    assert with_cache.validate_trainjob({"operation": "CREATE", "object": tj}).allowed


def test_num_nodes_zero_is_admitted_with_a_warning() -> None:
    """``numNodes: 0`` is valid (upstream's CRD minimum is 0 since kubeflow/trainer#3809, and its
    webhook test admits it) but trains nothing: the webhook admits it and says so, on create and
    when an update sets it, not on every later update."""
    rt = runtime()
    hooks_ = admission.Admission(
        cast(Client, None), clock=lambda: NOW, cached_runtime=lambda *_: rt
    )
    tj = trainjob(trainer={"numNodes": 0})
    tj["spec"]["runtimeRef"] = {"name": "rt", "kind": "TrainingRuntime"}
    verdict = hooks_.validate_trainjob({"operation": "CREATE", "object": tj})
    assert verdict.allowed
    assert verdict.warnings == [
        "spec.trainer.numNodes: 0 gives the trainer job no pods (parallelism 0), so the TrainJob "
        "completes without training: set numNodes to 1 or more to train (the local backend "
        "refuses 0)"
    ]
    one = copy.deepcopy(tj)
    one["spec"]["trainer"]["numNodes"] = 1
    assert hooks_.validate_trainjob({"operation": "CREATE", "object": one}).warnings == []
    zero_model, one_model = parse(tj), parse(one)
    assert isinstance(zero_model, TrainJob) and isinstance(one_model, TrainJob)
    assert validation.trainjob_warnings(zero_model, one_model) == verdict.warnings
    assert validation.trainjob_warnings(zero_model, zero_model) == []


@pytest.mark.parametrize(
    ("kind", "operation", "warned"),
    [
        pytest.param("ClusterTrainingRuntime", "CREATE", True, id="deprecated CTR create warns"),
        pytest.param("TrainingRuntime", "CREATE", True, id="deprecated TR create warns"),
        pytest.param(
            "ClusterTrainingRuntime", "UPDATE", False, id="deprecated CTR update is silent"
        ),
    ],
)
def test_deprecated_runtimes_warn_on_create(kind: str, operation: str, warned: bool) -> None:
    obj = runtime(kind, labels={"trainer.kubeflow.org/support": "deprecated"})
    if kind == "ClusterTrainingRuntime":
        del obj["metadata"]["namespace"]
        verdict = hooks.validate_cluster_training_runtime({"operation": operation, "object": obj})
    else:
        verdict = hooks.validate_training_runtime({"operation": operation, "object": obj})
    assert verdict.allowed
    want = [
        f'{kind} "rt" is deprecated and will be removed in a future release of Kubeflow Trainer. '
        "See runtime deprecation policy: https://trainer.kubeflow.org/en/latest/"
        "operator-guides/runtime.html#runtime-deprecation-policy"
    ]
    assert verdict.warnings == (want if warned else [])


@pytest.mark.parametrize(
    ("errors", "want"),
    [
        pytest.param(["a"], "a", id="one error is its own message"),
        pytest.param(["a", "b"], "[a, b]", id="several are bracketed and comma-joined"),
        pytest.param(["a", "a", "b"], "[a, b]", id="duplicates are dropped"),
        pytest.param(["a", "a"], "a", id="all duplicates collapse to one"),
    ],
)
def test_aggregate_joins_like_kubernetes(errors: list[str], want: str) -> None:
    assert admission.aggregate(errors) == want


def test_review_encodes_allowed_responses_with_a_base64_json_patch() -> None:
    body = json.dumps(
        {
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "request": {
                "uid": "u-1",
                "operation": "CREATE",
                "object": trainjob(runtimePatches=[patch("a.io/x", "s")]),
            },
        }
    ).encode()
    out = json.loads(admission.review(body, hooks.mutate_trainjob))
    resp = out["response"]
    assert out["kind"] == "AdmissionReview" and resp["uid"] == "u-1" and resp["allowed"]
    assert resp["patchType"] == "JSONPatch"
    ops = json.loads(base64.b64decode(resp["patch"]))
    assert ops[0]["value"][0]["time"] == NOW


def test_review_encodes_refusals_with_the_status() -> None:
    verdict = admission.deny(
        [FieldError.forbidden("spec.runtimePatches", "no")], "TrainJob.trainer.kubeflow.org", "j"
    )
    out = json.loads(admission.review(b'{"request": {"uid": "u"}}', lambda _r: verdict))
    assert out["response"]["allowed"] is False
    assert out["response"]["status"]["message"] == "spec.runtimePatches: Forbidden: no"
    assert out["response"]["status"]["details"]["kind"] == "TrainJob"
    assert out["response"]["status"]["details"]["group"] == "trainer.kubeflow.org"


def test_webhook_configurations_use_upstream_names_paths_and_skip_disabled_runtimes() -> None:
    mutating, validating = configurations(b"CA", url_base="https://127.0.0.1:9443")
    assert [w["name"] for w in mutating["webhooks"]] == ["defaulter.trainjob.trainer.kubeflow.org"]
    by_name = {w["name"]: w for w in validating["webhooks"]}
    assert sorted(by_name) == [
        "validator.clustertrainingruntime.trainer.kubeflow.org",
        "validator.optimizationjob.trainer.kubeflow.org",
        "validator.trainingruntime.trainer.kubeflow.org",
        "validator.trainjob.trainer.kubeflow.org",
    ]
    opt = by_name["validator.optimizationjob.trainer.kubeflow.org"]
    assert opt["rules"][0]["resources"] == ["optimizationjobs"]
    assert "objectSelector" not in opt
    tj = by_name["validator.trainjob.trainer.kubeflow.org"]
    assert tj["clientConfig"]["url"] == (
        "https://127.0.0.1:9443/validate-trainer-kubeflow-org-v1alpha1-trainjob"
    )
    assert tj["clientConfig"]["caBundle"] == base64.b64encode(b"CA").decode()
    assert "objectSelector" not in tj
    ctr = by_name["validator.clustertrainingruntime.trainer.kubeflow.org"]
    assert ctr["objectSelector"]["matchExpressions"][0]["key"] == (
        "trainer.kubeflow.org/webhook-validation"
    )
    assert all(w["failurePolicy"] == "Fail" for w in validating["webhooks"])


def optimization_job(**spec: Any) -> Obj:
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "OptimizationJob",
        "metadata": {"name": "sweep", "namespace": "default"},
        "spec": {
            "objectives": [{"metric": "loss"}],
            "parameters": [{"name": "lr", "searchSpace": {"uniform": {"min": "0.1", "max": "1"}}}],
            "numTrials": 2,
            "trainJobTemplate": {
                "spec": {
                    "runtimeRef": {"name": "torch-distributed"},
                    "trainer": {"args": ["{{.lr}}"]},
                }
            },
            **spec,
        },
    }


def test_the_optimizationjob_validator_refuses_with_the_sdks_field_message() -> None:
    assert hooks.validate_optimization_job({"object": optimization_job()}).allowed
    verdict = hooks.validate_optimization_job({"object": optimization_job(parallelTrials=3)})
    assert not verdict.allowed and verdict.status is not None
    assert verdict.status["message"] == (
        'spec: Invalid value: "...": parallelTrials cannot exceed numTrials'
    )
    assert verdict.status["details"]["kind"] == "OptimizationJob"


def test_the_optimizationjob_validator_keeps_the_spec_immutable() -> None:
    old, new = optimization_job(), optimization_job(numTrials=3)
    verdict = hooks.validate_optimization_job(
        {"operation": "UPDATE", "object": new, "oldObject": old}
    )
    assert not verdict.allowed and verdict.status is not None
    assert "OptimizationJobSpec is immutable" in verdict.status["message"]
    relabelled = {**old, "metadata": {**old["metadata"], "labels": {"a": "b"}}}
    assert hooks.validate_optimization_job(
        {"operation": "UPDATE", "object": relabelled, "oldObject": old}
    ).allowed
