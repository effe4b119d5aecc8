"""The controller's TrainJob status endpoint (KEP-2779) on the real apiserver.

trainjob's controller serves it by default: each trainer container of a TrainJob's JobSet gets
upstream's env and projected volume (its ``ca.crt`` the pod template's CA annotation, by the
downward API, where upstream creates a ConfigMap ``<name>-tls-config``: none is made), and a
POST is accepted only with a pod-bound ServiceAccount token (made here with the TokenRequest API,
as the kubelet makes it for the projected volume) for that TrainJob's audience, of a pod of that
TrainJob; then ``status.trainerStatus`` is server-side applied by field manager
``trainer-status``. Refused: another TrainJob's pod, no token, a token of another namespace's
pod, a token for another audience, a bad body, a body over 64 KiB. No kubelet runs here: the pods
are API objects, which is all the token checks read.
"""

from __future__ import annotations

import json
import ssl
import tempfile
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from tests.integration.controller_harness import Controller, start_controller, wait_for

from trainjob.core import trainerstatus as ts
from trainjob.kube import Client
from trainjob.kube import resources as r

if TYPE_CHECKING:
    from tests.integration.conftest import ControlPlane

pytestmark = pytest.mark.integration
pytest_plugins = ["tests.integration.controller_fixtures"]

JOB = {
    "apiVersion": "trainer.kubeflow.org/v1alpha1",
    "kind": "TrainJob",
    "spec": {"runtimeRef": {"name": "torch-distributed"}, "trainer": {"numNodes": 1}},
}


@pytest.fixture
def reporting(control_plane: ControlPlane, torch_runtime: str) -> Iterator[tuple[Controller, int]]:
    ctl = start_controller(
        control_plane,
        port_args=lambda port: [
            "--status-server-host",
            "127.0.0.1",
            "--status-server-port",
            str(port),
            "--status-server-url",
            f"https://127.0.0.1:{port}",
        ],
    )
    yield ctl, ctl.port("status")
    ctl.stop()


def _trainjob(kube: Client, ns: str, name: str) -> None:
    kube.create(r.TRAINJOBS, {**JOB, "metadata": {"name": name}}, ns)


def _trainer_template(jobset: dict[str, Any]) -> dict[str, Any]:
    rjob = next(j for j in jobset["spec"]["replicatedJobs"] if j["name"] == "node")
    template: dict[str, Any] = rjob["template"]["spec"]["template"]
    return template


def _ca(jobset: dict[str, Any]) -> str:
    """The status server's CA, as the trainer pod's downward API volume reads it."""
    return str(_trainer_template(jobset)["metadata"]["annotations"][ts.CA_ANNOTATION])


def _pod(
    kube: Client,
    ns: str,
    trainjob: str,
    sa: str = "trainer",
    template: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A pod of ``trainjob`` (its JobSet's name label); with ``template``, the JobSet's pod
    template's annotations, volumes and containers (the apiserver checks the volume's sources)."""
    if kube.get_or_none(r.SERVICE_ACCOUNTS, sa, ns) is None:
        kube.create(
            r.SERVICE_ACCOUNTS,
            {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": sa}},
            ns,
        )
    pod: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{trainjob}-node-0-0-abcde",
            "labels": {"jobset.sigs.k8s.io/jobset-name": trainjob},
        },
        "spec": {
            "serviceAccountName": sa,
            "containers": [{"name": "node", "image": "pytorch/pytorch"}],
        },
    }
    if template is not None:
        pod["metadata"]["annotations"] = template["metadata"]["annotations"]
        for key in ("volumes", "containers"):
            pod["spec"][key] = template["spec"][key]
    return kube.create(r.PODS, pod, ns)


def _token(kube: Client, ns: str, pod: dict[str, Any], audience: str) -> str:
    """What the kubelet writes to the projected volume: a token bound to the pod."""
    meta = pod["metadata"]
    answer = kube.request(
        "POST",
        f"/api/v1/namespaces/{ns}/serviceaccounts/{pod['spec']['serviceAccountName']}/token",
        body={
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenRequest",
            "spec": {
                "audiences": [audience],
                "expirationSeconds": ts.TOKEN_EXPIRY_SECONDS,
                "boundObjectRef": {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "name": meta["name"],
                    "uid": meta["uid"],
                },
            },
        },
    )
    return str(answer["status"]["token"])


class Endpoint:
    def __init__(self, port: int, ca: str) -> None:
        self.port = port
        self.ca_file = Path(tempfile.mkstemp(suffix=".crt")[1])
        self.ca_file.write_text(ca)

    def post(self, ns: str, name: str, token: str | None, body: Any) -> tuple[int, dict[str, Any]]:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        req = urllib.request.Request(
            f"https://127.0.0.1:{self.port}{ts.path(ns, name)}", data=data, method="POST"
        )
        req.add_header("Content-Type", "application/json")
        if token is not None:
            req.add_header("Authorization", f"Bearer {token}")
        ctx = ssl.create_default_context(cafile=str(self.ca_file))
        try:
            with urllib.request.urlopen(req, context=ctx, timeout=15) as resp:
                return resp.status, json.loads(resp.read())
        except urllib.error.HTTPError as e:
            raw = e.read()
            try:
                return e.code, json.loads(raw)
            except ValueError:
                return e.code, {"raw": raw.decode(errors="replace")}


def _update(percent: int, **more: Any) -> dict[str, Any]:
    return {
        "trainerStatus": {
            "progressPercentage": percent,
            "estimatedRemainingSeconds": 30,
            "metrics": [{"name": "loss", "value": "0.5"}],
            "lastUpdatedTime": "2026-12-01T10:00:00.123456+00:00",
            **more,
        }
    }


def test_a_pod_of_the_trainjob_reports_and_every_other_caller_is_refused(
    kube: Client, reporting: tuple[Controller, int], namespace: str
) -> None:
    _, port = reporting
    _trainjob(kube, namespace, "a")
    _trainjob(kube, namespace, "b")
    js = wait_for(lambda: kube.get_or_none(r.JOBSETS, "a", namespace), what="JobSet a")

    # the env and the projected volume, as upstream's TrainJobStatus plugin injects them
    rjob = next(j for j in js["spec"]["replicatedJobs"] if j["name"] == "node")
    pod_spec = rjob["template"]["spec"]["template"]["spec"]
    node = next(c for c in pod_spec["containers"] if c["name"] == "node")
    env = {e["name"]: e.get("value") for e in node["env"]}
    assert env[ts.ENV_SERVER_URL] == f"https://127.0.0.1:{port}{ts.path(namespace, 'a')}"
    assert env[ts.ENV_CA_CERT] == "/var/run/secrets/kubeflow/trainer/ca.crt"
    assert env[ts.ENV_TOKEN] == "/var/run/secrets/kubeflow/trainer/token"
    assert {"name": ts.TOKEN_VOLUME, "mountPath": ts.MOUNT_PATH, "readOnly": True} in node[
        "volumeMounts"
    ]
    [volume] = [v for v in pod_spec["volumes"] if v["name"] == ts.TOKEN_VOLUME]
    sources = volume["projected"]["sources"]
    assert sources[0]["serviceAccountToken"] == {
        "audience": ts.audience(namespace, "a"),
        "expirationSeconds": 3600,
        "path": "token",
    }
    assert sources[1]["downwardAPI"]["items"] == [
        {
            "path": "ca.crt",
            "fieldRef": {
                "apiVersion": "v1",
                "fieldPath": f"metadata.annotations['{ts.CA_ANNOTATION}']",
            },
        }
    ]
    assert kube.get_or_none(r.CONFIGMAPS, "a-tls-config", namespace) is None  # upstream's
    endpoint = Endpoint(port, _ca(js))

    # a pod made from the JobSet's template: the apiserver takes its volume's sources
    pod_a = _pod(kube, namespace, "a", template=_trainer_template(js))
    assert pod_a["metadata"]["annotations"][ts.CA_ANNOTATION] == _ca(js)
    pod_b = _pod(kube, namespace, "b")
    token_a = _token(kube, namespace, pod_a, ts.audience(namespace, "a"))

    code, body = endpoint.post(namespace, "a", token_a, _update(40))
    assert code == 200, body
    assert body["trainerStatus"]["progressPercentage"] == 40
    tj = kube.get(r.TRAINJOBS, "a", namespace)
    assert tj["status"]["trainerStatus"] == {
        "progressPercentage": 40,
        "estimatedRemainingSeconds": 30,
        "metrics": [{"name": "loss", "value": "0.5"}],
        "lastUpdatedTime": "2026-12-01T10:00:00Z",
    }
    managers = {m["manager"] for m in tj["metadata"]["managedFields"]}
    assert ts.FIELD_MANAGER in managers
    # a second report replaces the first (upstream's apply: the metrics it leaves out go)
    assert endpoint.post(namespace, "a", token_a, _update(60, metrics=None))[0] == 200
    got = kube.get(r.TRAINJOBS, "a", namespace)["status"]["trainerStatus"]
    assert got["progressPercentage"] == 60 and "metrics" not in got

    def refused(code: int, body: dict[str, Any], reason: str) -> None:
        assert body.get("kind", "Status") == "Status" and body["status"] == "Failure", body
        assert body["reason"] == reason and body["code"] == code, body

    # b's pod with a token for a's audience: the pod is not a's
    token_b_for_a = _token(kube, namespace, pod_b, ts.audience(namespace, "a"))
    code, body = endpoint.post(namespace, "a", token_b_for_a, _update(1))
    assert code == 403
    refused(code, body, "Forbidden")
    # b's pod with its own token, on a's endpoint: the audience is b's
    token_b = _token(kube, namespace, pod_b, ts.audience(namespace, "b"))
    assert endpoint.post(namespace, "a", token_b, _update(1))[0] == 403
    assert endpoint.post(namespace, "b", token_b, _update(5))[0] == 200  # but b's own works
    # no token, a token that is no token
    assert endpoint.post(namespace, "a", None, _update(1))[0] == 403
    assert endpoint.post(namespace, "a", "not-a-token", _update(1))[0] == 403
    # a bad body: the field is named, nothing is written
    code, body = endpoint.post(namespace, "a", token_a, _update(101))
    assert code == 422 and "progressPercentage" in body["message"], body
    refused(code, body, "Invalid")
    code, body = endpoint.post(namespace, "a", token_a, b"{not json")
    assert code == 422
    assert endpoint.post(namespace, "a", token_a, b" " * (ts.MAX_BODY + 1))[0] == 413
    assert (
        kube.get(r.TRAINJOBS, "a", namespace)["status"]["trainerStatus"]["progressPercentage"] == 60
    )


def test_a_pod_of_another_namespace_is_refused(
    kube: Client, reporting: tuple[Controller, int], control_plane: ControlPlane, namespace: str
) -> None:
    _, port = reporting
    _trainjob(kube, namespace, "c")
    js = wait_for(lambda: kube.get_or_none(r.JOBSETS, "c", namespace), what="JobSet c")
    endpoint = Endpoint(port, _ca(js))
    other = namespace[:50] + "-other"
    control_plane.create(
        "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": other}}
    )
    try:
        # a pod named and labelled as c's, in another namespace, with a token for c's audience
        pod = _pod(kube, other, "c")
        token = _token(kube, other, pod, ts.audience(namespace, "c"))
        code, body = endpoint.post(namespace, "c", token, _update(10))
        assert code == 403 and body["reason"] == "Forbidden", body
        # a TrainJob that does not exist: its (real) pod reports, and hears 404
        ghost = _pod(kube, namespace, "ghost")
        token = _token(kube, namespace, ghost, ts.audience(namespace, "ghost"))
        code, body = endpoint.post(namespace, "ghost", token, _update(10))
        assert code == 404 and body["reason"] == "NotFound", body
    finally:
        control_plane.request("DELETE", f"/api/v1/namespaces/{other}", ok=(200, 202, 404))
    assert "trainerStatus" not in (kube.get(r.TRAINJOBS, "c", namespace).get("status") or {})


def test_with_the_status_server_off_the_jobset_is_upstreams(
    control_plane: ControlPlane, kube: Client, namespace: str, torch_runtime: str
) -> None:
    ctl = start_controller(control_plane, "--no-status-server")
    try:
        _trainjob(kube, namespace, "plain")
        js = wait_for(lambda: kube.get_or_none(r.JOBSETS, "plain", namespace), what="JobSet")
    finally:
        ctl.stop()
    text = json.dumps(js)
    assert ts.ENV_SERVER_URL not in text and ts.TOKEN_VOLUME not in text
    assert ts.CA_ANNOTATION not in text
