"""The TrainJobStatus plugin (upstream ``plugins/trainjobstatus``): with a status server, every
trainer container gets upstream's env and mount, the pod the projected token + CA volume, and the
Plan the CA ConfigMap owned by the TrainJob; without one (upstream's gate off, the local backend)
the Plan is exactly as before."""

from __future__ import annotations

from tests.unit.helpers import builtin, container_of, env_of, pod_spec_of, trainjob
from trainjob.core import trainerstatus as ts
from trainjob.runtime import CompileOptions, compile
from trainjob.runtime.plugins.trainjobstatus import StatusServer

SERVER = StatusServer("https://trainjob-controller.trainjob-system.svc:10443", "PEM")


def test_the_trainer_gets_upstreams_env_volume_and_ca_configmap() -> None:
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
        {"configMap": {"name": "tune-tls-config", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
    ]
    [cm] = [o for o in plan.objects if o["kind"] == "ConfigMap"]
    assert cm["metadata"]["name"] == "tune-tls-config" and cm["data"] == {"ca.crt": "PEM"}
    assert cm["metadata"]["ownerReferences"][0]["kind"] == "TrainJob"
    assert plan.objects[-1]["kind"] == "JobSet"


def test_without_a_status_server_the_plan_is_unchanged() -> None:
    tj = trainjob(name="tune", namespace="team")
    plain = compile(tj, builtin("torch-distributed"))
    again = compile(tj, builtin("torch-distributed"), CompileOptions())
    assert plain == again
    assert ts.ENV_SERVER_URL not in str(plain.objects)
    assert not [o for o in plain.objects if o["kind"] == "ConfigMap"]


def test_initializers_get_nothing() -> None:
    tj = trainjob("torchtune-qwen2.5-1.5b", name="tune", namespace="team")
    plan = compile(tj, builtin("torchtune-qwen2.5-1.5b"), CompileOptions(status_server=SERVER))
    for job in ("dataset-initializer", "model-initializer"):
        spec = pod_spec_of(plan, job)
        assert ts.ENV_SERVER_URL not in str(spec)
