"""The generated CRDs on a real kube-apiserver: CEL rules compile and reject with upstream's
messages, defaults are applied as the schema says, and nothing a document says is pruned.

The cases and documents are the unit tests' (tests/unit/api/cel_cases.yaml, crd_docs.py), so the
Python checks, the schema simulation and the apiserver are held to the same table.
"""

from __future__ import annotations

import copy
import json
import ssl
import urllib.request
from typing import TYPE_CHECKING, Any

import pytest
from tests.unit.api.crd_docs import (
    CEL_CASES,
    PLURAL_OF,
    apply_defaults,
    complete,
    documents,
    is_subset,
)

from trainjob.api import crd

if TYPE_CHECKING:
    from tests.integration.conftest import ControlPlane

pytestmark = pytest.mark.integration

API = "/apis/trainer.kubeflow.org/v1alpha1"
MERGE = "application/merge-patch+json"
Obj = dict[str, Any]


def collection(kind: str, namespace: str) -> str:
    plural = PLURAL_OF[kind]
    if kind == "ClusterTrainingRuntime":
        return f"{API}/{plural}"
    return f"{API}/namespaces/{namespace}/{plural}"


def placed(kind: str, obj: Obj, namespace: str) -> Obj:
    """Cluster-scoped objects are named after the test's namespace, so tests do not collide."""
    out = complete(kind, obj)
    if kind == "ClusterTrainingRuntime":
        out["metadata"]["name"] = namespace
    else:
        out["metadata"].pop("namespace", None)
    return out


def test_committed_crds_are_the_installed_ones(control_plane: ControlPlane) -> None:
    for resource in crd.RESOURCES:
        got = control_plane.get(
            f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{resource.name}"
        )
        want = crd.crd(resource)["spec"]
        assert got["spec"]["names"]["kind"] == want["names"]["kind"]
        assert got["spec"]["scope"] == want["scope"]
        assert got["spec"]["versions"][0]["schema"] == want["versions"][0]["schema"]


@pytest.mark.parametrize("case", [pytest.param(c, id=c["id"]) for c in CEL_CASES])
def test_cel_rule_rejects_with_the_upstream_message(
    control_plane: ControlPlane, namespace: str, case: Obj
) -> None:
    kind = case["kind"]
    base = collection(kind, namespace)
    obj = placed(kind, case["object"], namespace)
    if "old" in case:
        old = control_plane.create(base, placed(kind, case["old"], namespace))
        url = f"{base}/{old['metadata']['name']}"
        if case.get("status"):
            body = control_plane.request(
                "PATCH", f"{url}/status", {"status": obj["status"]}, content_type=MERGE, ok=(422,)
            )
        else:
            body = control_plane.request(
                "PATCH", url, {"spec": obj["spec"]}, content_type=MERGE, ok=(422,)
            )
    else:
        try:
            body = control_plane.create(base, obj, ok=(422,))
        finally:
            if kind == "ClusterTrainingRuntime":
                control_plane.request("DELETE", f"{base}/{namespace}", ok=(200, 404))
    causes = body["details"]["causes"]
    assert any(c["field"] == case["field"] and case["message"] in c["message"] for c in causes), (
        causes
    )


@pytest.mark.parametrize("doc", [pytest.param(d, id=name) for name, d in documents()])
def test_documents_are_stored_as_written_plus_crd_defaults(
    control_plane: ControlPlane, namespace: str, doc: Obj
) -> None:
    kind = doc["kind"]
    base = collection(kind, namespace)
    obj = placed(kind, doc, namespace)
    status = obj.pop("status", None)
    schema = crd.openapi_schema(crd.RESOURCES[list(PLURAL_OF).index(kind)].model)
    try:
        stored = control_plane.create(base, copy.deepcopy(obj))
        assert stored["spec"] == apply_defaults(obj, schema)["spec"]
        assert is_subset(obj["metadata"], stored["metadata"]) == []
        if status is not None:
            name = stored["metadata"]["name"]
            stored = control_plane.request(
                "PATCH", f"{base}/{name}/status", {"status": status}, content_type=MERGE
            )
            assert stored["status"] == status
    finally:
        if kind == "ClusterTrainingRuntime":
            control_plane.request("DELETE", f"{base}/{namespace}", ok=(200, 404))


def test_runtime_patch_pod_fields_are_immutable_but_node_selector_is_not(
    control_plane: ControlPlane, namespace: str
) -> None:
    base = collection("TrainJob", namespace)

    def patch(spec: Obj) -> Obj:
        return {
            "manager": "example.com/manager",
            "trainingRuntimeSpec": {
                "template": {
                    "spec": {
                        "replicatedJobs": [
                            {"name": "node", "template": {"spec": {"template": {"spec": spec}}}}
                        ]
                    }
                }
            },
        }

    job = placed(
        "TrainJob",
        {
            "metadata": {"name": "patched"},
            "spec": {"suspend": True, "runtimePatches": [patch({"serviceAccountName": "a"})]},
        },
        namespace,
    )
    control_plane.create(base, job)
    rejected = control_plane.request(
        "PATCH",
        f"{base}/patched",
        {"spec": {"runtimePatches": [patch({"serviceAccountName": "b"})]}},
        content_type=MERGE,
        ok=(422,),
    )
    assert [c["field"] for c in rejected["details"]["causes"]] == [
        "spec.runtimePatches[0].trainingRuntimeSpec.template.spec.replicatedJobs[0]"
        ".template.spec.template.spec.serviceAccountName"
    ]
    assert "field is immutable" in rejected["details"]["causes"][0]["message"]
    accepted = control_plane.request(
        "PATCH",
        f"{base}/patched",
        {
            "spec": {
                "runtimePatches": [
                    patch({"serviceAccountName": "a", "nodeSelector": {"pool": "gpu"}})
                ]
            }
        },
        content_type=MERGE,
    )
    pod = accepted["spec"]["runtimePatches"][0]["trainingRuntimeSpec"]["template"]["spec"][
        "replicatedJobs"
    ][0]["template"]["spec"]["template"]["spec"]
    assert pod == {"serviceAccountName": "a", "nodeSelector": {"pool": "gpu"}}


def get_table(cp: ControlPlane, path: str) -> Obj:
    """A list as ``kubectl get`` asks for it: a meta.k8s.io Table with the printer columns."""
    req = urllib.request.Request(cp.server + path, headers=cp.auth_headers)
    req.add_header("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
    ctx = ssl.create_default_context(cafile=str(cp.ca_file))
    with urllib.request.urlopen(req, context=ctx, timeout=30) as resp:
        table: Obj = json.loads(resp.read())
    return table


def test_printer_columns_show_the_last_condition(
    control_plane: ControlPlane, namespace: str
) -> None:
    base = collection("TrainJob", namespace)
    job = placed("TrainJob", {"metadata": {"name": "shown"}, "spec": {}}, namespace)
    control_plane.create(base, job)
    condition = {
        "type": "Complete",
        "status": "True",
        "reason": "AllJobsCompleted",
        "message": "jobset completed successfully",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }
    suspended = {**condition, "type": "Suspended", "status": "False", "reason": "Resumed"}
    control_plane.request(
        "PATCH",
        f"{base}/shown/status",
        {"status": {"conditions": [suspended, condition]}},
        content_type=MERGE,
    )
    table = get_table(control_plane, base)
    columns = [c["name"] for c in table["columnDefinitions"]]
    assert columns == ["Name", "State", "Age"]
    (row,) = table["rows"]
    assert row["cells"][:2] == ["shown", "Complete"]
