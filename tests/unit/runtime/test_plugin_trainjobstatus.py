"""The TrainJobStatus plugin (upstream ``plugins/trainjobstatus``): with a status server, every
trainer container gets upstream's env and mount, the pod the projected token + CA volume, the CA
in the pod template's annotation (the volume's downward API reads it: no ConfigMap, trainjob's
deliberate difference); without one (upstream's gate off, the local backend) the Plan is exactly
as before."""

from __future__ import annotations

from tests.unit.helpers import builtin, container_of, env_of, pod_spec_of, trainjob
from trainjob.core import trainerstatus as ts
from trainjob.runtime import CompileOptions, compile
from trainjob.runtime.plugins.trainjobstatus import StatusServer

SERVER = StatusServer("https://trainjob-controller.trainjob-system.svc:10443", "PEM")


def test_the_trainer_gets_upstreams_env_and_volume_and_the_ca_by_the_downward_api() -> None:
    tj = trainjob(name="tune", namespace="team")
    plan = compile(tj, builtin("torch-distributed"), CompileOptions(status_server=SERVER))
    env = env_of(container_of(plan, "node", "node"))
    assert env[ts.ENV_SERVER_URL] == (
        "https://trainjob-controller.trainjob-system.svc:10443"
        "/apis/trainer.kubeflow.org/v1alpha1/namespaces/team/trainjobs/tune/status"
    )
    assert env[ts.ENV_CA_CERT] == "/var/run/secrets/kubeflow/trainer/ca.crt"
    assert env[ts.ENV_TOKEN] == "/var/run/secrets/kubeflow/trainer/token"
    mounts = container_of(plan, "node", "node")["volumeMounts"]
    assert {
        "name": "kubeflow-trainer-token",
        "mountPath": ts.MOUNT_PATH,
        "readOnly": True,
    } in mounts
    [volume] = [v for v in pod_spec_of(plan, "node")["volumes"] if v["name"] == ts.TOKEN_VOLUME]
    assert volume["projected"]["sources"] == [
        {
            "serviceAccountToken": {
                "audience": "trainer.kubeflow.org/v1alpha1/namespaces/team/trainjobs/tune/status",
                "expirationSeconds": 3600,
                "path": "token",
            }
        },
        {
            "downwardAPI": {
                "items": [
                    {
                        "path": "ca.crt",
                        "fieldRef": {
                            "apiVersion": "v1",
                            "fieldPath": "metadata.annotations['trainer.kubeflow.org/status-server-ca']",
                        },
                    }
                ]
            }
        },
    ]
    [node] = [j for j in plan.jobset["spec"]["replicatedJobs"] if j["name"] == "node"]
    annotations = node["template"]["spec"]["template"]["metadata"]["annotations"]
    assert annotations[ts.CA_ANNOTATION] == "PEM"
    assert [o["kind"] for o in plan.objects] == ["JobSet"]  # nothing else to write


def test_the_ca_annotation_joins_the_runtime_patches_annotations() -> None:
    patch = {
        "manager": "example.com/tests",
        "trainingRuntimeSpec": {
            "template": {
                "spec": {
                    "replicatedJobs": [
                        {
                            "name": "node",
                            "template": {
                                "spec": {"template": {"metadata": {"annotations": {"team": "a"}}}}
                            },
                        }
                    ]
                }
            }
        },
    }
    tj = trainjob(name="tune", namespace="team", runtimePatches=[patch])
    plan = compile(tj, builtin("torch-distributed"), CompileOptions(status_server=SERVER))
    [node] = [j for j in plan.jobset["spec"]["replicatedJobs"] if j["name"] == "node"]
    annotations = node["template"]["spec"]["template"]["metadata"]["annotations"]
    assert annotations["team"] == "a" and annotations[ts.CA_ANNOTATION] == "PEM"


def test_without_a_status_server_the_plan_is_unchanged() -> None:
    tj = trainjob(name="tune", namespace="team")
    plain = compile(tj, builtin("torch-distributed"))
    again = compile(tj, builtin("torch-distributed"), CompileOptions())
    assert plain == again
    assert ts.ENV_SERVER_URL not in str(plain.objects)
    assert ts.CA_ANNOTATION not in str(plain.objects)


def test_initializers_get_nothing() -> None:
    tj = trainjob("torchtune-qwen2.5-1.5b", name="tune", namespace="team")
    plan = compile(tj, builtin("torchtune-qwen2.5-1.5b"), CompileOptions(status_server=SERVER))
    for job in ("dataset-initializer", "model-initializer"):
        spec = pod_spec_of(plan, job)
        assert ts.ENV_SERVER_URL not in str(spec)
