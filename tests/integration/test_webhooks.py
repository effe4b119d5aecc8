"""The admission webhooks, called by the real apiserver (registered on loopback with our CA):
refusals carry upstream's messages as the apiserver relays them, and the mutating webhook stamps
runtime patches and translates v2.0/v2.1 fields."""

from __future__ import annotations

import copy
import json
import shutil
import subprocess
from typing import TYPE_CHECKING, Any

import pytest
from tests.integration.controller_harness import Controller, builtin_runtime, trainjob

from trainjob.api import validation
from trainjob.kube import Client
from trainjob.kube import resources as r
from trainjob.kube.errors import ApiError, Forbidden

pytest_plugins = ["tests.integration.controller_fixtures"]
pytestmark = pytest.mark.integration
Obj = dict[str, Any]

if TYPE_CHECKING:
    from tests.integration.conftest import ControlPlane

DENIED = 'admission webhook "{hook}" denied the request: '
TRAINJOB_HOOK = DENIED.format(hook="validator.trainjob.trainer.kubeflow.org")


def refused(fn: Any) -> ApiError:
    with pytest.raises(ApiError) as info:
        fn()
    return info.value


def namespaced_runtime(namespace: str, name: str = "rt", **changes: Any) -> Obj:
    rt = builtin_runtime("torch-distributed")
    rt["kind"] = "TrainingRuntime"
    rt["metadata"] = {"name": name, "namespace": namespace, **changes.pop("metadata", {})}
    return rt


@pytest.mark.parametrize(
    ("body", "message"),
    [
        pytest.param(
            {"runtimeRef": {"name": "nope"}},
            'spec.RuntimeRef: Invalid value: {"name":"nope","apiGroup":"trainer.kubeflow.org",'
            '"kind":"ClusterTrainingRuntime"}: ClusterTrainingRuntime.trainer.kubeflow.org '
            '"nope" not found: specified clusterTrainingRuntime must be created before the TrainJob is '
            "created",
            id="a missing ClusterTrainingRuntime",
        ),
        pytest.param(
            {"runtimeRef": {"name": "nope", "kind": "TrainingRuntime"}},
            'spec.runtimeRef: Invalid value: {"name":"nope","apiGroup":"trainer.kubeflow.org",'
            '"kind":"TrainingRuntime"}: TrainingRuntime.trainer.kubeflow.org "nope" not '
            "found: specified trainingRuntime must be created before the TrainJob is created",
            id="a missing TrainingRuntime",
        ),
        pytest.param(
            {
                "runtimeRef": {"name": "torch-distributed"},
                "trainer": {"env": [{"name": "PET_NODE_RANK", "value": "1"}]},
            },
            'spec.trainer.env: Invalid value: [{"name":"PET_NODE_RANK","value":"1"}]: must not have '
            "reserved envs, invalid envs configured: [PET_NODE_RANK]",
            id="a reserved torch env",
        ),
        pytest.param(
            {
                "runtimeRef": {"name": "torch-distributed"},
                "initializer": {"dataset": {"storageUri": "hf://a/b"}},
                "trainer": {"env": [{"name": "PET_NNODES", "value": "1"}]},
            },
            None,
            id="several errors are bracketed",
        ),
    ],
)
def test_invalid_trainjobs_are_refused_with_upstream_messages(
    kube: Client, controller: Controller, namespace: str, body: Obj, message: str | None
) -> None:
    obj = trainjob("bad", namespace)
    obj["spec"] = body
    err = refused(lambda: kube.create(r.TRAINJOBS, obj))
    assert isinstance(err, Forbidden) and err.status == 403
    assert err.message.startswith(TRAINJOB_HOOK)
    if message is not None:
        assert err.message == TRAINJOB_HOOK + message
    else:
        rest = err.message[len(TRAINJOB_HOOK) :]
        assert rest.startswith("[") and rest.endswith("]") and rest.count("Invalid value") == 2
        assert "must have dataset-initializer job" in rest and "PET_NNODES" in rest
    assert err.causes, "the Status names the fields"
    assert kube.get_or_none(r.TRAINJOBS, "bad", namespace) is None


def test_a_training_runtime_with_two_trainer_replicas_is_refused(
    kube: Client, controller: Controller, namespace: str
) -> None:
    rt = namespaced_runtime(namespace)
    rt["spec"]["template"]["spec"]["replicatedJobs"][0]["replicas"] = 2
    err = refused(lambda: kube.create(r.TRAINING_RUNTIMES, rt))
    assert err.message == (
        DENIED.format(hook="validator.trainingruntime.trainer.kubeflow.org")
        + "spec.template.spec.replicatedJobs[0].replicas: Invalid value: 2: always must be 1"
    )


def test_a_cluster_runtime_without_the_node_container_is_refused(
    kube: Client, controller: Controller, namespace: str
) -> None:
    rt = builtin_runtime("torch-distributed")
    rt["metadata"] = {"name": f"ctr-{namespace}"}
    rt["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"][
        "containers"
    ][0]["name"] = "main"
    err = refused(lambda: kube.create(r.CLUSTER_TRAINING_RUNTIMES, rt))
    assert err.message.startswith(
        DENIED.format(hook="validator.clustertrainingruntime.trainer.kubeflow.org")
        + "spec.template.spec.replicatedJobs[0].template.spec.template.spec.containers: Invalid value: "
    )
    assert err.message.endswith("must contain the required container for the ancestor: trainer")


def test_runtimes_labelled_webhook_validation_disabled_skip_the_webhook(
    kube: Client, controller: Controller, namespace: str
) -> None:
    rt = namespaced_runtime(
        namespace, metadata={"labels": {"trainer.kubeflow.org/webhook-validation": "disabled"}}
    )
    rt["spec"]["template"]["spec"]["replicatedJobs"][0]["replicas"] = 2
    kube.create(r.TRAINING_RUNTIMES, rt)
    assert (
        kube.get(r.TRAINING_RUNTIMES, "rt", namespace)["spec"]["template"]["spec"][
            "replicatedJobs"
        ][0]["replicas"]
        == 2
    )


def test_the_mutating_webhook_stamps_patches_and_translates_legacy_fields(
    kube: Client, controller: Controller, namespace: str
) -> None:
    obj = trainjob(
        "legacy",
        namespace,
        suspend=True,
        labels={"team": "a"},
        podTemplateOverrides=[
            {"targetJobs": [{"name": "node"}], "spec": {"nodeSelector": {"pool": "cpu"}}}
        ],
    )
    created = kube.create(r.TRAINJOBS, obj)
    spec = created["spec"]
    assert "labels" not in spec and "podTemplateOverrides" not in spec
    patches = spec["runtimePatches"]
    assert [p["manager"] for p in patches] == [
        "trainer.kubeflow.org/v2.0-metadata",
        "trainer.kubeflow.org/v2.1-pod-template-overrides",
    ]
    assert all(p.get("time") for p in patches)
    # An update that leaves a patch as it was keeps its time.
    before = copy.deepcopy(patches)
    updated = kube.patch(r.TRAINJOBS, "legacy", {"metadata": {"labels": {"x": "y"}}}, namespace)
    assert updated["spec"]["runtimePatches"] == before


def test_a_changed_runtime_patch_gets_the_admission_time_whatever_time_the_client_sent(
    kube: Client, controller: Controller, namespace: str
) -> None:
    """Upstream's defaulter: on update, a manager's patch whose content changed is stamped with
    the admission time even when the client kept (or set) another; an unchanged one keeps the
    stored time whatever the client sent."""
    earlier = "2020-01-01T00:00:00Z"

    def patch(manager: str, pool: str) -> Obj:
        return {
            "manager": manager,
            "time": earlier,
            "trainingRuntimeSpec": {
                "template": {
                    "spec": {
                        "replicatedJobs": [
                            {
                                "name": "node",
                                "template": {
                                    "spec": {"template": {"spec": {"nodeSelector": {"pool": pool}}}}
                                },
                            }
                        ]
                    }
                }
            },
        }

    obj = trainjob(
        "stamped",
        namespace,
        suspend=True,
        runtimePatches=[patch("a.io/x", "a"), patch("b.io/y", "b")],
    )
    created = kube.create(r.TRAINJOBS, obj)
    assert [p["time"] for p in created["spec"]["runtimePatches"]] == [earlier, earlier]
    changed = [patch("a.io/x", "CHANGED"), {**patch("b.io/y", "b"), "time": "2021-01-01T00:00:00Z"}]
    updated = kube.patch(r.TRAINJOBS, "stamped", {"spec": {"runtimePatches": changed}}, namespace)
    times = [p["time"] for p in updated["spec"]["runtimePatches"]]
    assert times[0] != earlier, "the changed patch kept the client's time"
    assert times[1] == earlier, "the unchanged patch took the client's time, not the stored one"


WEBHOOK_CALLS = "apiserver_admission_webhook_admission_duration_seconds_count{"


def webhook_calls(kube: Client) -> dict[str, int]:
    """How many times the apiserver has called each admission webhook (by name), from its own
    metrics."""
    out: dict[str, int] = {}
    for line in str(kube.request("GET", "/metrics", accept="text/plain")).splitlines():
        if line.startswith(WEBHOOK_CALLS):
            labels, _, value = line[len(WEBHOOK_CALLS) :].rpartition("} ")
            name = next(
                (p.split("=", 1)[1].strip('"') for p in labels.split(",") if p.startswith("name=")),
                "",
            )
            out[name] = out.get(name, 0) + int(float(value))
    return out


def test_the_defaulter_is_called_only_when_it_has_something_to_do(
    kube: Client, controller: Controller, namespace: str
) -> None:
    """Its matchConditions (admission.MUTATE_TRAINJOB_WHEN) skip a TrainJob with no runtime
    patches and no v2.0/v2.1 fields: the apiserver calls the validator alone."""
    defaulter, validator = (
        "defaulter.trainjob.trainer.kubeflow.org",
        "validator.trainjob.trainer.kubeflow.org",
    )
    before = webhook_calls(kube)
    kube.create(r.TRAINJOBS, trainjob("plain", namespace, suspend=True))
    after = webhook_calls(kube)
    assert after.get(validator, 0) == before.get(validator, 0) + 1
    assert after.get(defaulter, 0) == before.get(defaulter, 0)
    patch = {
        "manager": "example.com/tests",
        "trainingRuntimeSpec": {"template": {"metadata": {"labels": {"team": "a"}}}},
    }
    created = kube.create(
        r.TRAINJOBS, trainjob("patched", namespace, suspend=True, runtimePatches=[patch])
    )
    assert created["spec"]["runtimePatches"][0]["time"]  # stamped by the defaulter
    assert webhook_calls(kube).get(defaulter, 0) == after.get(defaulter, 0) + 1


def test_runtime_patches_of_a_running_trainjob_cannot_change(
    kube: Client, controller: Controller, namespace: str
) -> None:
    kube.create(r.TRAINJOBS, trainjob("running", namespace))
    change = {
        "spec": {
            "runtimePatches": [
                {
                    "manager": "example.com/late",
                    "trainingRuntimeSpec": {"template": {"metadata": {"labels": {"a": "b"}}}},
                }
            ]
        }
    }
    err = refused(lambda: kube.patch(r.TRAINJOBS, "running", change, namespace))
    assert "RuntimePatches can only be modified when the TrainJob is suspended" in err.message


def test_names_jobset_would_refuse_are_refused_and_num_nodes_zero_is_warned(
    kube: Client, controller: Controller, namespace: str, control_plane: ControlPlane
) -> None:
    """Issue 28's wrong accepts, on the real apiserver: a runtime whose replicatedJob name is no
    DNS-1035 label, and a TrainJob whose pods JobSet would name past 63 characters, are refused
    with the lines ``plan``, ``run`` and the SDK give (tests/unit/corpus); ``numNodes: 0``, valid
    as upstream's, is admitted with the warning kubectl prints."""
    rt = namespaced_runtime(namespace)
    bad = copy.deepcopy(rt)
    bad["spec"]["template"]["spec"]["replicatedJobs"][0]["name"] = "Node_1"
    err = refused(lambda: kube.create(r.TRAINING_RUNTIMES, bad))
    assert err.message == (
        DENIED.format(hook="validator.trainingruntime.trainer.kubeflow.org")
        + 'spec.template.spec.replicatedJobs[0].name: Invalid value: "Node_1": a DNS-1035 label '
        "must consist of lower case alphanumeric characters or '-', start with an alphabetic "
        "character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex "
        "used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
    )
    kube.create(r.TRAINING_RUNTIMES, rt)
    name = "n" * 50
    obj = trainjob(name, namespace, runtime="rt")
    obj["spec"]["runtimeRef"]["kind"] = "TrainingRuntime"
    err = refused(lambda: kube.create(r.TRAINJOBS, obj))
    assert err.message == TRAINJOB_HOOK + (
        f'metadata.name: Invalid value: "{name}": JobSet name is too long, pod names generated '
        f'for this JobSet will exceed 63 characters (replicatedJob "node": pod "{name}-node-0-0-'
        "xxxxx\", 65 characters): shorten the TrainJob's name"
    )
    assert kube.get_or_none(r.TRAINJOBS, name, namespace) is None

    zero = trainjob("zero", namespace, runtime="rt", trainer={"numNodes": 0})
    zero["spec"]["runtimeRef"]["kind"] = "TrainingRuntime"
    if shutil.which("kubectl") is None:
        pytest.skip("kubectl is not on PATH: cannot read the warning as kubectl prints it")
    out = subprocess.run(
        ["kubectl", "--kubeconfig", str(control_plane.kubeconfig), "create", "-f", "-"],
        input=json.dumps(zero),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    assert out.stderr == f"Warning: {validation.NUM_NODES_ZERO_WARNING}\n"
    assert kube.get(r.TRAINJOBS, "zero", namespace)["spec"]["trainer"]["numNodes"] == 0
