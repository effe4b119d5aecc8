"""The controller on a real kube-apiserver: TrainJob -> JobSet, status back, suspend/resume,
deadlines, managedBy, missing runtimes, owner references, events, probes and metrics.

No JobSet controller runs: the tests play it by writing JobSet status, as upstream's do.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from tests.integration.controller_harness import (
    Controller,
    builtin_runtime,
    conditions,
    trainjob,
    wait_for,
)

from trainjob.api.load import parse
from trainjob.controller.webhooks.serving import DEV_NAMESPACE_OPT_OUT
from trainjob.core.trainerstatus import CA_ANNOTATION, ENV_SERVER_URL
from trainjob.kube import Client
from trainjob.kube import resources as r
from trainjob.kube.errors import NotFound
from trainjob.runtime import compile
from trainjob.runtime.compiler import CompileOptions
from trainjob.runtime.plugins.trainjobstatus import StatusServer

pytest_plugins = ["tests.integration.controller_fixtures"]
pytestmark = pytest.mark.integration
Obj = dict[str, Any]


def is_subset(want: Any, got: Any, path: str = "") -> list[str]:
    """Where ``want`` is not contained in ``got`` (dicts by key, lists item by item)."""
    if isinstance(want, dict):
        if not isinstance(got, dict):
            return [f"{path}: want an object, got {got!r}"]
        out: list[str] = []
        for k, v in want.items():
            out += is_subset(v, got.get(k), f"{path}.{k}")
        return out
    if isinstance(want, list):
        if not isinstance(got, list) or len(got) != len(want):
            return [f"{path}: want {want!r}, got {got!r}"]
        out = []
        for i, (a, b) in enumerate(zip(want, got, strict=True)):
            out += is_subset(a, b, f"{path}[{i}]")
        return out
    return [] if want == got else [f"{path}: want {want!r}, got {got!r}"]


def jobset_of(kube: Client, name: str, ns: str, timeout: float = 20) -> Obj:
    return wait_for(
        lambda: kube.get_or_none(r.JOBSETS, name, ns), timeout=timeout, what=f"JobSet {ns}/{name}"
    )


def set_jobset_status(kube: Client, name: str, ns: str, status: Obj) -> None:
    kube.patch_status(r.JOBSETS, name, ns, status)


def owner_of(obj: Obj) -> list[Obj]:
    return list(obj["metadata"].get("ownerReferences") or [])


def expected_owner(tj: Obj) -> list[Obj]:
    return [
        {
            "apiVersion": "trainer.kubeflow.org/v1alpha1",
            "kind": "TrainJob",
            "name": tj["metadata"]["name"],
            "uid": tj["metadata"]["uid"],
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]


def test_a_trainjob_becomes_the_jobset_the_compiler_plans(
    kube: Client, controller: Controller, namespace: str
) -> None:
    kube.create(
        r.TRAINJOBS,
        trainjob(
            "ddp",
            namespace,
            trainer={
                "numNodes": 2,
                "command": ["torchrun", "train.py"],
                "env": [{"name": "EPOCHS", "value": "3"}],
                "resourcesPerNode": {"requests": {"cpu": "2"}},
            },
            runtimePatches=[
                {
                    "manager": "example.com/tests",
                    "trainingRuntimeSpec": {"template": {"metadata": {"labels": {"team": "a"}}}},
                }
            ],
        ),
    )
    js = jobset_of(kube, "ddp", namespace)
    tj = kube.get(r.TRAINJOBS, "ddp", namespace)
    runtime = parse(kube.get(r.CLUSTER_TRAINING_RUNTIMES, "torch-distributed"))
    # the controller serves the status endpoint (on by default): compile with the same server
    pod = js["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]
    url = next(
        e["value"] for e in pod["spec"]["containers"][0]["env"] if e["name"] == ENV_SERVER_URL
    )
    ca = pod["metadata"]["annotations"][CA_ANNOTATION]
    server = StatusServer(url.split("/apis/", 1)[0], ca)
    plan = compile(parse(tj), runtime, CompileOptions(status_server=server))  # type: ignore[arg-type]
    assert is_subset(plan.jobset, js) == []
    assert js["metadata"]["labels"]["team"] == "a"
    assert owner_of(js) == expected_owner(tj)
    managers = {(m["manager"], m["operation"]) for m in js["metadata"]["managedFields"]}
    assert ("trainjob", "Apply") in managers
    # The runtime snapshot: owned by the TrainJob, holding the runtime.
    cm = kube.get(r.CONFIGMAPS, "ddp-runtime-snapshot", namespace)
    assert owner_of(cm) == expected_owner(tj)
    assert "name: torch-distributed" in cm["data"]["runtime"]
    # The webhook stamped the runtime patch.
    assert tj["spec"]["runtimePatches"][0]["time"]


@pytest.mark.parametrize(
    ("jobset_condition", "want_type", "want_reason"),
    [
        pytest.param(
            {
                "type": "Completed",
                "reason": "AllJobsCompleted",
                "message": "jobset completed successfully",
            },
            "Complete",
            "AllJobsCompleted",
            id="a completed JobSet completes the TrainJob",
        ),
        pytest.param(
            {
                "type": "Failed",
                "reason": "FailedJobs",
                "message": "jobset failed due to one or more job failures",
            },
            "Failed",
            "FailedJobs",
            id="a failed JobSet fails the TrainJob",
        ),
    ],
)
def test_jobset_status_is_mapped_to_trainjob_conditions_and_jobs_status(
    kube: Client,
    controller: Controller,
    namespace: str,
    jobset_condition: Obj,
    want_type: str,
    want_reason: str,
) -> None:
    kube.create(r.TRAINJOBS, trainjob("job", namespace))
    jobset_of(kube, "job", namespace)
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    set_jobset_status(
        kube,
        "job",
        namespace,
        {
            "conditions": [{**jobset_condition, "status": "True", "lastTransitionTime": now}],
            "replicatedJobsStatus": [
                {
                    "name": "node",
                    "ready": 0,
                    "succeeded": 1,
                    "failed": 0,
                    "active": 0,
                    "suspended": 0,
                }
            ],
        },
    )
    cond = wait_for(
        lambda: conditions(kube, "job", namespace).get(want_type), what=f"{want_type} condition"
    )
    assert cond["status"] == "True"
    assert cond["reason"] == want_reason and cond["message"] == jobset_condition["message"]
    assert cond["lastTransitionTime"] == now
    tj = kube.get(r.TRAINJOBS, "job", namespace)
    assert tj["status"]["jobsStatus"] == [
        {"name": "node", "ready": 0, "succeeded": 1, "failed": 0, "active": 0, "suspended": 0}
    ]

    # A finished TrainJob's JobSet, once deleted (a JobSet TTL, a user), is not recreated.
    kube.delete(r.JOBSETS, "job", namespace)
    wait_for(lambda: kube.get_or_none(r.JOBSETS, "job", namespace) is None, what="JobSet deleted")
    kube.patch(
        r.TRAINJOBS, "job", {"metadata": {"labels": {"poke": "1"}}}, namespace
    )  # a reconcile
    time.sleep(2)
    assert kube.get_or_none(r.JOBSETS, "job", namespace) is None
    assert conditions(kube, "job", namespace)[want_type]["status"] == "True"


def test_suspend_and_resume_flow_down_to_the_jobset(
    kube: Client, controller: Controller, namespace: str
) -> None:
    kube.create(r.TRAINJOBS, trainjob("sus", namespace, suspend=True))
    js = jobset_of(kube, "sus", namespace)
    assert js["spec"]["suspend"] is True
    cond = wait_for(lambda: conditions(kube, "sus", namespace).get("Suspended"), what="Suspended")
    assert (cond["status"], cond["reason"], cond["message"]) == (
        "True",
        "Suspended",
        "TrainJob is suspended",
    )
    # While suspended the JobSet is re-applied: a runtime patch reaches it.
    kube.patch(
        r.TRAINJOBS,
        "sus",
        {
            "spec": {
                "runtimePatches": [
                    {
                        "manager": "example.com/kueue",
                        "trainingRuntimeSpec": {
                            "template": {
                                "spec": {
                                    "replicatedJobs": [
                                        {
                                            "name": "node",
                                            "template": {
                                                "spec": {
                                                    "template": {
                                                        "spec": {"nodeSelector": {"pool": "gpu"}}
                                                    }
                                                }
                                            },
                                        }
                                    ]
                                }
                            }
                        },
                    }
                ]
            }
        },
        namespace,
    )
    wait_for(
        lambda: (
            kube.get(r.JOBSETS, "sus", namespace)["spec"]["replicatedJobs"][0]["template"]["spec"][
                "template"
            ]["spec"].get("nodeSelector")
            == {"pool": "gpu"}
        ),
        what="the patch applied to the suspended JobSet",
    )
    kube.patch(r.TRAINJOBS, "sus", {"spec": {"suspend": False}}, namespace)
    wait_for(
        lambda: kube.get(r.JOBSETS, "sus", namespace)["spec"]["suspend"] is False,
        what="JobSet resumed",
    )
    cond = wait_for(
        lambda: (
            (c := conditions(kube, "sus", namespace).get("Suspended"))
            and c["status"] == "False"
            and c
        ),
        what="Suspended=False",
    )
    assert (cond["reason"], cond["message"]) == ("Resumed", "TrainJob is resumed")


def test_a_running_jobset_is_not_changed(
    kube: Client, controller: Controller, namespace: str
) -> None:
    kube.create(r.TRAINJOBS, trainjob("run", namespace))
    jobset_of(kube, "run", namespace)
    # Someone else edits the running JobSet; the controller must not take the field back.
    edit = {
        "spec": {
            "replicatedJobs": [
                {
                    "name": "node",
                    "template": {
                        "spec": {
                            "template": {
                                "spec": {"containers": [{"name": "node", "image": "edited:1"}]}
                            }
                        }
                    },
                }
            ]
        }
    }
    kube.apply(
        {
            "apiVersion": "jobset.x-k8s.io/v1alpha2",
            "kind": "JobSet",
            "metadata": {"name": "run", "namespace": namespace},
            **edit,
        },
        field_manager="someone-else",
    )
    kube.patch(r.TRAINJOBS, "run", {"metadata": {"labels": {"poke": "1"}}}, namespace)
    time.sleep(1.5)
    after = kube.get(r.JOBSETS, "run", namespace)
    containers = after["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"][
        "containers"
    ]
    assert containers[0]["image"] == "edited:1"


def test_active_deadline_fails_the_trainjob_and_deletes_its_jobset(
    kube: Client, controller: Controller, namespace: str
) -> None:
    kube.create(r.TRAINJOBS, trainjob("late", namespace, activeDeadlineSeconds=2))
    jobset_of(kube, "late", namespace)
    cond = wait_for(
        lambda: conditions(kube, "late", namespace).get("Failed"),
        timeout=20,
        what="DeadlineExceeded",
    )
    assert (cond["status"], cond["reason"], cond["message"]) == (
        "True",
        "DeadlineExceeded",
        "TrainJob exceeded its active deadline",
    )
    wait_for(lambda: kube.get_or_none(r.JOBSETS, "late", namespace) is None, what="JobSet deleted")


def test_multikueue_trainjobs_are_left_alone(
    kube: Client, controller: Controller, namespace: str
) -> None:
    kube.create(r.TRAINJOBS, trainjob("mk", namespace, managedBy="kueue.x-k8s.io/multikueue"))
    kube.create(r.TRAINJOBS, trainjob("ours", namespace))
    jobset_of(kube, "ours", namespace)  # the controller is working
    time.sleep(1)
    assert kube.get_or_none(r.JOBSETS, "mk", namespace) is None
    assert not kube.get(r.TRAINJOBS, "mk", namespace).get("status")


def test_a_missing_runtime_sets_a_condition_and_an_event_then_recovers(
    kube: Client, controller: Controller, namespace: str
) -> None:
    # Without webhooks (this namespace opts out), a TrainJob can exist before its runtime.
    kube.patch(
        r.NAMESPACES, namespace, {"metadata": {"labels": {DEV_NAMESPACE_OPT_OUT: "disabled"}}}
    )
    kube.create(
        r.TRAINJOBS,
        trainjob(
            "early",
            namespace,
            runtime="later",
            runtimeRef={"name": "later", "kind": "TrainingRuntime"},
        ),
    )
    cond = wait_for(
        lambda: conditions(kube, "early", namespace).get("RuntimeNotFound"), what="RuntimeNotFound"
    )
    message = (
        'TrainingRuntime specified in TrainJob is not found: TrainingRuntime.trainer.kubeflow.org "later" '
        "not found"
    )
    assert (cond["status"], cond["reason"], cond["message"]) == (
        "True",
        "TrainingRuntimeNotFound",
        message,
    )

    def warning() -> Obj | None:
        items, _ = kube.list_all(r.EVENTS, namespace)
        return next((e for e in items if e["reason"] == "TrainJobResourcesCreationFailed"), None)

    event = wait_for(warning, what="TrainJobResourcesCreationFailed event")
    assert event["type"] == "Warning" and event["action"] == "Reconciling"
    assert event["note"] == "TrainJob resources reconciliation failed: " + message
    assert event["regarding"]["name"] == "early" and event["regarding"]["kind"] == "TrainJob"
    assert event["reportingController"] == "trainer-trainjob-controller"
    assert kube.get_or_none(r.JOBSETS, "early", namespace) is None

    rt = builtin_runtime("torch-distributed")
    rt["kind"] = "TrainingRuntime"
    rt["metadata"] = {"name": "later", "namespace": namespace}
    kube.create(r.TRAINING_RUNTIMES, rt)
    jobset_of(kube, "early", namespace)
    wait_for(
        lambda: "RuntimeNotFound" not in conditions(kube, "early", namespace),
        what="RuntimeNotFound removed",
    )
    # Repeats were folded into one Event (series), not one object per retry.
    items, _ = kube.list_all(r.EVENTS, namespace)
    assert len([e for e in items if e["reason"] == "TrainJobResourcesCreationFailed"]) == 1


def test_an_unsupported_runtime_kind_fails_the_trainjob(
    kube: Client, controller: Controller, namespace: str
) -> None:
    kube.patch(
        r.NAMESPACES, namespace, {"metadata": {"labels": {DEV_NAMESPACE_OPT_OUT: "disabled"}}}
    )
    try:
        kube.create(
            r.TRAINJOBS,
            trainjob(
                "odd",
                namespace,
                runtimeRef={"name": "x", "apiGroup": "example.com", "kind": "Other"},
            ),
        )
    except Exception as e:  # the CRD may refuse the kind before the controller sees it
        pytest.skip(f"the CRD refuses unsupported runtimeRef kinds: {e}")
    cond = wait_for(lambda: conditions(kube, "odd", namespace).get("Failed"), what="Failed")
    assert (cond["reason"], cond["message"]) == (
        "TrainingRuntimeNotSupported",
        "unsupported runtime: Other.example.com",
    )


def test_the_snapshot_protects_a_trainjob_from_runtime_edits(
    kube: Client, controller: Controller, namespace: str
) -> None:
    rt = builtin_runtime("torch-distributed")
    rt["kind"] = "TrainingRuntime"
    rt["metadata"] = {"name": "mine", "namespace": namespace}
    kube.create(r.TRAINING_RUNTIMES, rt)
    kube.create(
        r.TRAINJOBS,
        trainjob(
            "snap", namespace, runtimeRef={"name": "mine", "kind": "TrainingRuntime"}, suspend=True
        ),
    )
    js = jobset_of(kube, "snap", namespace)
    image = js["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["containers"][
        0
    ]["image"]
    rt_live = kube.get(r.TRAINING_RUNTIMES, "mine", namespace)
    rt_live["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"][
        "spec"
    ]["containers"][0]["image"] = "changed:latest"
    kube.replace(r.TRAINING_RUNTIMES, rt_live)
    # A reconcile of the suspended TrainJob re-applies its JobSet, from the snapshot.
    kube.patch(r.TRAINJOBS, "snap", {"metadata": {"labels": {"poke": "1"}}}, namespace)
    time.sleep(1.5)
    js = kube.get(r.JOBSETS, "snap", namespace)
    assert (
        js["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["containers"][0][
            "image"
        ]
        == image
    )


def test_deleting_a_trainjob_leaves_nothing_for_the_controller(
    kube: Client, controller: Controller, namespace: str
) -> None:
    kube.create(r.TRAINJOBS, trainjob("gone", namespace))
    jobset_of(kube, "gone", namespace)
    kube.delete(r.TRAINJOBS, "gone", namespace)
    wait_for(lambda: kube.get_or_none(r.TRAINJOBS, "gone", namespace) is None, what="deleted")
    # No kube-controller-manager runs, so garbage collection is not ours to test; the controller
    # must simply not recreate anything nor fail.
    time.sleep(1)
    with pytest.raises(NotFound):
        kube.get(r.TRAINJOBS, "gone", namespace)


def test_probes_and_metrics(kube: Client, controller: Controller, namespace: str) -> None:
    assert controller.get(controller.health_port, "/healthz") == (200, "ok\n")
    assert controller.get(controller.health_port, "/readyz") == (200, "ok\n")
    kube.create(r.TRAINJOBS, trainjob("m", namespace))
    jobset_of(kube, "m", namespace)
    text = wait_for(
        lambda: (t := controller.metrics()) and 'trainjob_trainjobs{state="Running"}' in t and t,
        what="metrics",
    )
    assert 'controller_runtime_reconcile_total{controller="trainjob",result="success"}' in text
    assert "controller_runtime_reconcile_time_seconds_bucket" in text
    assert 'workqueue_depth{name="trainjob"}' in text
    running = [
        ln for ln in text.splitlines() if ln.startswith('trainjob_trainjobs{state="Running"}')
    ]
    assert float(running[0].split()[-1]) >= 1
