"""Gang scheduling objects: a coscheduling runtime gets a PodGroup next to its JobSet; the PodGroup
is re-applied while the TrainJob is suspended and left alone once it runs (upstream).

The scheduler-plugins CRD is not part of the test control plane, so a PodGroup CRD with the same
group, version and names but an open schema is installed here."""

from __future__ import annotations

import copy
import time
from typing import TYPE_CHECKING, Any

import pytest
from tests.integration.controller_harness import (
    builtin_runtime,
    start_controller,
    trainjob,
    wait_for,
)

from trainjob.kube import Client
from trainjob.kube import resources as r

if TYPE_CHECKING:
    from tests.integration.conftest import ControlPlane

pytest_plugins = ["tests.integration.controller_fixtures"]
pytestmark = pytest.mark.integration
Obj = dict[str, Any]

PODGROUP_CRD: Obj = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "podgroups.scheduling.x-k8s.io"},
    "spec": {
        "group": "scheduling.x-k8s.io",
        "scope": "Namespaced",
        "names": {
            "plural": "podgroups",
            "singular": "podgroup",
            "kind": "PodGroup",
            "listKind": "PodGroupList",
        },
        "versions": [
            {
                "name": "v1alpha1",
                "served": True,
                "storage": True,
                "subresources": {"status": {}},
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "x-kubernetes-preserve-unknown-fields": True,
                    }
                },
            }
        ],
    },
}


def min_member(kube: Client, name: str, ns: str) -> int | None:
    pg = kube.get_or_none(r.COSCHEDULING_PODGROUPS, name, ns)
    return None if pg is None else pg["spec"]["minMember"]


def test_podgroups_follow_suspension(
    control_plane: ControlPlane, kube: Client, torch_runtime: str, namespace: str
) -> None:
    kube.apply(PODGROUP_CRD, field_manager="trainjob-tests")
    wait_for(
        lambda: any(
            c["type"] == "Established" and c["status"] == "True"
            for c in (
                kube.get(r.CUSTOM_RESOURCE_DEFINITIONS, "podgroups.scheduling.x-k8s.io").get(
                    "status"
                )
                or {}
            ).get("conditions")
            or []
        ),
        what="PodGroup CRD established",
    )
    rt = copy.deepcopy(builtin_runtime("torch-distributed"))
    rt["kind"] = "TrainingRuntime"
    rt["metadata"] = {"name": "gang", "namespace": namespace}
    rt["spec"]["podGroupPolicy"] = {"coscheduling": {"scheduleTimeoutSeconds": 100}}
    kube.create(r.TRAINING_RUNTIMES, rt)
    ctl = start_controller(control_plane, webhooks=False)
    try:
        kube.create(
            r.TRAINJOBS,
            trainjob(
                "gang",
                namespace,
                runtimeRef={"name": "gang", "kind": "TrainingRuntime"},
                suspend=True,
                trainer={"numNodes": 3},
            ),
        )
        wait_for(lambda: min_member(kube, "gang", namespace) == 3, what="PodGroup of 3")
        pg = kube.get(r.COSCHEDULING_PODGROUPS, "gang", namespace)
        assert pg["spec"]["scheduleTimeoutSeconds"] == 100
        assert pg["metadata"]["ownerReferences"][0]["name"] == "gang"
        # the PodGroup is applied before the JobSet that names it, in the same reconcile
        wait_for(
            lambda: kube.get_or_none(r.JOBSETS, "gang", namespace) is not None,
            what="JobSet created",
        )
        js = kube.get(r.JOBSETS, "gang", namespace)
        pod_labels = js["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["metadata"][
            "labels"
        ]
        assert pod_labels["scheduling.x-k8s.io/pod-group"] == "gang"

        def edit(value: int) -> None:
            kube.apply(
                {
                    "apiVersion": "scheduling.x-k8s.io/v1alpha1",
                    "kind": "PodGroup",
                    "metadata": {"name": "gang", "namespace": namespace},
                    "spec": {"minMember": value},
                },
                field_manager="someone-else",
            )
            kube.patch(
                r.TRAINJOBS, "gang", {"metadata": {"labels": {"poke": str(value)}}}, namespace
            )

        # Suspended: the controller re-applies its PodGroup (and takes minMember back).
        edit(99)
        wait_for(lambda: min_member(kube, "gang", namespace) == 3, what="PodGroup re-applied")
        # Running: the PodGroup exists and is left alone.
        kube.patch(r.TRAINJOBS, "gang", {"spec": {"suspend": False}}, namespace)
        wait_for(
            lambda: kube.get(r.JOBSETS, "gang", namespace)["spec"]["suspend"] is False,
            what="resumed",
        )
        edit(77)
        time.sleep(1.5)
        assert min_member(kube, "gang", namespace) == 77
    finally:
        ctl.stop()
