"""The Workspace plugin: a TrainJob annotated with a snapshot's digest gets, in every trainer
pod, an init container that unpacks the archive (the TrainJob's ConfigMap, or an s3:// object)
into a read-only volume on PYTHONPATH and the working directory; the compiler reads only the
annotations. Without them the Plan is exactly as before."""

from __future__ import annotations

import pytest

from tests.unit.helpers import builtin, container_of, env_of, pod_spec_of, trainjob
from trainjob.api.trainer import TrainJob
from trainjob.runtime import compile, validate
from trainjob.workspace import names

DIGEST = "sha256:" + "ab" * 32
URI = "s3://bucket/code/" + "ab" * 32 + ".tar.gz"


def annotated(tj: TrainJob, **annotations: str) -> TrainJob:
    tj.metadata.annotations = dict(annotations)
    return tj


def test_the_trainer_unpacks_the_configmap_into_a_read_only_volume_on_pythonpath() -> None:
    tj = annotated(
        trainjob(name="tune", trainer={"numNodes": 2, "command": ["python", "train.py"]}),
        **{names.DIGEST: DIGEST, names.SOURCE: "/home/me/proj"},
    )
    plan = compile(tj, builtin("torch-distributed"))
    pod = pod_spec_of(plan, "node")
    [init] = pod["initContainers"]
    node = container_of(plan, "node", "node")
    assert init["name"] == "workspace" and init["image"] == node["image"]
    assert init["command"][:3] == ["python3", "-c", names.UNPACK_SCRIPT]
    assert init["command"][3:] == [
        "/trainjob/workspace-archive/workspace.tar.gz",
        "/trainjob/workspace",
        DIGEST,
    ]
    assert {"name": "trainjob-workspace-archive", "configMap": {"name": "tune-workspace"}} in pod[
        "volumes"
    ]
    assert {"name": "trainjob-workspace", "emptyDir": {}} in pod["volumes"]
    assert {
        "name": "trainjob-workspace",
        "mountPath": "/trainjob/workspace",
        "readOnly": True,
    } in node["volumeMounts"]
    assert env_of(node)["PYTHONPATH"] == "/trainjob/workspace"
    assert node["workingDir"] == "/trainjob/workspace"
    assert [o["kind"] for o in plan.objects] == ["JobSet"]  # the ConfigMap is the submitter's


def test_an_s3_workspace_is_fetched_with_the_trainers_env_and_no_configmap() -> None:
    tj = annotated(
        trainjob(
            trainer={
                "env": [
                    {"name": "ENDPOINT", "value": "http://s3:9000"},
                    {"name": "PYTHONPATH", "value": "/opt/extra"},
                ]
            }
        ),
        **{names.DIGEST: DIGEST, names.URI: URI},
    )
    plan = compile(tj, builtin("torch-distributed"))
    pod = pod_spec_of(plan, "node")
    [init] = pod["initContainers"]
    assert init["command"] == [
        "python3",
        "-c",
        names.UNPACK_SCRIPT,
        URI,
        "/trainjob/workspace",
        DIGEST,
    ]
    assert {"name": "ENDPOINT", "value": "http://s3:9000"} in init["env"]
    assert not any(v["name"] == "trainjob-workspace-archive" for v in pod["volumes"])
    node = container_of(plan, "node", "node")
    assert env_of(node)["PYTHONPATH"] == "/trainjob/workspace:/opt/extra"


def test_without_the_annotation_the_plan_is_unchanged() -> None:
    plain = compile(trainjob(), builtin("torch-distributed"))
    assert "initContainers" not in pod_spec_of(plain, "node")
    assert "PYTHONPATH" not in env_of(container_of(plain, "node", "node"))


def test_the_same_annotations_compile_to_the_same_bytes() -> None:
    one = compile(annotated(trainjob(), **{names.DIGEST: DIGEST}), builtin("torch-distributed"))
    two = compile(annotated(trainjob(), **{names.DIGEST: DIGEST}), builtin("torch-distributed"))
    assert one.to_json() == two.to_json()


@pytest.mark.parametrize(
    ("annotations", "error"),
    [
        pytest.param(
            {names.DIGEST: "sha256:xyz"},
            "metadata.annotations[trainer.kubeflow.org/workspace-digest]: Invalid value: "
            '"sha256:xyz": must be sha256: followed by 64 hex digits',
            id="a digest that is not one",
        ),
        pytest.param(
            {names.DIGEST: DIGEST, names.URI: "http://x/y"},
            "metadata.annotations[trainer.kubeflow.org/workspace-uri]: Invalid value: "
            '"http://x/y": must be s3://bucket/key',
            id="a URI that is not s3",
        ),
        pytest.param(
            {names.URI: URI},
            "metadata.annotations[trainer.kubeflow.org/workspace-digest]: Required value",
            id="a URI without its digest",
        ),
    ],
)
def test_bad_annotations_are_field_errors(annotations: dict[str, str], error: str) -> None:
    errors = validate(annotated(trainjob(), **annotations), builtin("torch-distributed"))
    assert any(str(e).startswith(error) for e in errors), [str(e) for e in errors]


def test_the_snapshot_of_a_trainjob_cannot_change() -> None:
    old = annotated(trainjob(), **{names.DIGEST: DIGEST})
    new = annotated(trainjob(), **{names.DIGEST: "sha256:" + "cd" * 32})
    errors = [str(e) for e in validate(new, builtin("torch-distributed"), old)]
    assert any(
        "workspace-digest]: Invalid value" in e and "field is immutable" in e for e in errors
    )


def test_with_mpi_the_workers_get_the_workspace_as_well_as_the_launcher() -> None:
    tj = annotated(trainjob("mpi-distributed", name="pi"), **{names.DIGEST: DIGEST})
    plan = compile(tj, builtin("mpi-distributed"))
    for job in ("launcher", "node"):
        pod = pod_spec_of(plan, job)
        assert pod["initContainers"][0]["name"] == names.INIT_CONTAINER, job
        assert {"name": "trainjob-workspace-archive", "configMap": {"name": "pi-workspace"}} in pod[
            "volumes"
        ]
        assert env_of(container_of(plan, job, "node"))["PYTHONPATH"] == names.MOUNT_PATH
