"""The kubernetes backend's requests and responses, pinned with ``httpx.MockTransport``.

``FakeApiserver`` answers like a kube-apiserver from in-memory objects and records every
request, so each test states the exact payload a cluster would receive.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.unit.client import shippable as s
from trainjob.client import types
from trainjob.client.backends.kubernetes import KubernetesBackend
from trainjob.executor.catalog import builtin_runtimes
from trainjob.kube import Client, Config

API = "/apis/trainer.kubeflow.org/v1alpha1"
TORCH = builtin_runtimes()["torch-distributed"].to_dict()


def status_404(what: str) -> httpx.Response:
    return httpx.Response(
        404, json={"kind": "Status", "reason": "NotFound", "message": f"{what} not found"}
    )


class FakeApiserver:
    def __init__(self) -> None:
        self.requests: list[httpx.Request] = []
        self.objects: dict[str, dict[str, Any]] = {
            f"{API}/clustertrainingruntimes/torch-distributed": TORCH
        }
        self.lists: dict[str, list[dict[str, Any]]] = {}
        self.pods: list[list[dict[str, Any]]] = []  # successive answers to pod lists
        self.logs: dict[str, str] = {}
        self.events: list[dict[str, Any]] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        path = request.url.path
        if request.method == "POST":
            body = json.loads(request.content)
            name = body["metadata"]["name"]
            self.objects[f"{path}/{name}"] = body
            return httpx.Response(201, json=body)
        if request.method == "DELETE":
            if self.objects.pop(path, None) is None:
                return status_404(path)
            return httpx.Response(200, json={"kind": "Status", "status": "Success"})
        if path.endswith("/pods"):
            answer = self.pods.pop(0) if len(self.pods) > 1 else (self.pods[0] if self.pods else [])
            return httpx.Response(200, json={"items": answer})
        if path.endswith("/log"):
            return httpx.Response(200, text=self.logs.get(path.split("/")[-2], ""))
        if "/pods/" in path:  # one pod, as the latest pod list shows it
            name = path.rsplit("/", 1)[-1]
            found = [
                p for p in (self.pods[0] if self.pods else []) if p["metadata"]["name"] == name
            ]
            return httpx.Response(200, json=found[0]) if found else status_404(path)
        if path.endswith("/events"):
            return httpx.Response(200, json={"items": self.events})
        if path in self.lists:
            return httpx.Response(200, json={"items": self.lists[path]})
        if path in self.objects:
            return httpx.Response(200, json=self.objects[path])
        return status_404(path)

    def paths(self) -> list[str]:
        return [f"{r.method} {r.url.path}" for r in self.requests]


def status_403(what: str) -> httpx.Response:
    return httpx.Response(
        403,
        json={
            "kind": "Status",
            "reason": "Forbidden",
            "message": f"{what} is forbidden: User cannot get",
        },
    )


def test_a_forbidden_namespaced_runtime_is_an_error_as_upstream_not_a_fallback() -> None:
    server = FakeApiserver()
    forbidden = f"{API}/namespaces/team/trainingruntimes"

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path.startswith(forbidden):
            server.requests.append(request)
            return status_403(request.url.path)
        return server(request)

    conn = Config(server="https://k8s.example:6443", namespace="team", token="tok")
    be = KubernetesBackend(client=connect(conn, handler), poll_interval=0.01)
    with pytest.raises(RuntimeError, match="403 Forbidden") as err:
        be.get_runtime("torch-distributed")
    assert "team/torch-distributed" in str(err.value)
    with pytest.raises(RuntimeError, match="403 Forbidden"):
        be.list_runtimes()
    with pytest.raises(RuntimeError, match="403 Forbidden"):
        be.train(runtime="torch-distributed", trainer=types.CustomTrainer(func=s.train_no_args))
    # nothing was read from the cluster scope, and nothing was created
    assert not [p for p in server.paths() if "clustertrainingruntimes" in p or p.startswith("POST")]


def connect(config: Config, handler: Any) -> Client:
    return Client(config, transport=httpx.MockTransport(handler))


def backend(server: FakeApiserver, namespace: str = "team") -> KubernetesBackend:
    conn = Config(server="https://k8s.example:6443", namespace=namespace, token="tok")
    return KubernetesBackend(client=connect(conn, server), poll_interval=0.01)


def pod(
    job: str, rjob: str, index: int, phase: str, limits: dict[str, Any] | None = None
) -> dict[str, Any]:
    ctr: dict[str, Any] = {"name": rjob if "initializer" in rjob else "node"}
    if limits:
        ctr["resources"] = {"limits": limits}
    return {
        "metadata": {
            "name": f"{job}-{rjob}-0-{index}-abcde",
            "labels": {
                "jobset.sigs.k8s.io/jobset-name": job,
                "jobset.sigs.k8s.io/replicatedjob-name": rjob,
                "batch.kubernetes.io/job-completion-index": str(index),
            },
        },
        "spec": {"containers": [ctr]},
        "status": {"phase": phase},
    }


def trainjob_cr(
    name: str,
    num_nodes: int = 2,
    conditions: list[dict[str, Any]] | None = None,
    runtime: str = "torch-distributed",
) -> dict[str, Any]:
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {
            "name": name,
            "namespace": "team",
            "creationTimestamp": "2025-03-04T05:06:07Z",
        },
        "spec": {"runtimeRef": {"name": runtime}, "trainer": {"numNodes": num_nodes}},
        "status": {"conditions": conditions or []},
    }


def test_train_posts_the_trainjob_to_the_namespace_with_the_bearer_token() -> None:
    server = FakeApiserver()
    name = backend(server).train(
        runtime="torch-distributed",
        trainer=types.CustomTrainer(func=s.train_no_args, num_nodes=2, env={"A": "1"}),
    )
    post = server.requests[-1]
    assert server.paths() == [
        f"GET {API}/namespaces/team/trainingruntimes/torch-distributed",
        f"GET {API}/clustertrainingruntimes/torch-distributed",
        f"POST {API}/namespaces/team/trainjobs",
    ]
    assert post.headers["Authorization"] == "Bearer tok"
    assert post.headers["Content-Type"] == "application/json"
    body = json.loads(post.content)
    command = body["spec"]["trainer"].pop("command")
    assert body == {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": name},
        "spec": {
            "runtimeRef": {"name": "torch-distributed"},
            "trainer": {"numNodes": 2, "env": [{"name": "A", "value": "1"}]},
        },
    }
    assert command[:2] == ["bash", "-c"]
    assert command[2].endswith('torchrun "$SCRIPT_DIR"/shippable.py')


def test_train_with_an_unshippable_function_sends_nothing() -> None:
    server = FakeApiserver()
    with pytest.raises(ValueError, match="lambdas cannot be shipped"):
        backend(server).train(
            runtime="torch-distributed", trainer=types.CustomTrainer(func=s.train_lambda)
        )
    assert not any(r.method == "POST" for r in server.requests)


def test_list_runtimes_reads_namespaced_then_cluster_runtimes_and_skips_unlabelled_ones(
    caplog: pytest.LogCaptureFixture,
) -> None:
    server = FakeApiserver()
    unlabelled = json.loads(json.dumps(TORCH))
    unlabelled["metadata"] = {"name": "no-label"}
    mine = json.loads(json.dumps(TORCH))
    mine["metadata"]["name"] = "team-torch"
    mine["kind"] = "TrainingRuntime"
    server.lists[f"{API}/namespaces/team/trainingruntimes"] = [mine]
    server.lists[f"{API}/clustertrainingruntimes"] = [TORCH, unlabelled]
    got = backend(server).list_runtimes()
    assert [(r.name, r.kind.value) for r in got] == [
        ("team-torch", "TrainingRuntime"),
        ("torch-distributed", "ClusterTrainingRuntime"),
    ]
    assert "Runtime no-label must have trainer.kubeflow.org/framework label." in caplog.text


def test_get_job_maps_pods_to_steps_and_all_running_nodes_to_running() -> None:
    server = FakeApiserver()
    server.objects[f"{API}/namespaces/team/trainjobs/job1"] = trainjob_cr("job1")
    server.pods = [
        [
            pod("job1", "node", 1, "Running", {"nvidia.com/gpu": 2}),
            pod("job1", "node", 0, "Running", {"nvidia.com/gpu": 2}),
            pod("job1", "dataset-initializer", 0, "Succeeded"),
        ]
    ]
    job = backend(server).get_job("job1")
    assert job.status == "Running"
    assert job.num_nodes == 2
    assert job.runtime.name == "torch-distributed"
    assert job.creation_timestamp.isoformat() == "2025-03-04T05:06:07+00:00"
    assert [(st.name, st.status, st.device, st.device_count) for st in job.steps] == [
        ("dataset-initializer", "Succeeded", "Unknown", "Unknown"),
        ("node-0", "Running", "gpu", "2"),
        ("node-1", "Running", "gpu", "2"),
    ]
    pods_req = next(r for r in server.requests if r.url.path.endswith("/pods"))
    assert pods_req.url.params["labelSelector"] == "jobset.sigs.k8s.io/jobset-name=job1"


@pytest.mark.parametrize(
    ("conditions", "phases", "want"),
    [
        pytest.param(
            [{"type": "Complete", "status": "True"}],
            ["Succeeded", "Succeeded"],
            "Complete",
            id="a Complete condition",
        ),
        pytest.param(
            [{"type": "Failed", "status": "True"}],
            ["Failed", "Running"],
            "Failed",
            id="a Failed condition",
        ),
        pytest.param([], ["Running", "Pending"], "Created", id="a pending node"),
    ],
)
def test_get_job_status(conditions: Any, phases: Any, want: str) -> None:
    server = FakeApiserver()
    server.objects[f"{API}/namespaces/team/trainjobs/j"] = trainjob_cr("j", conditions=conditions)
    server.pods = [[pod("j", "node", i, p) for i, p in enumerate(phases)]]
    assert backend(server).get_job("j").status == want


def test_list_jobs_reads_all_pods_once_and_each_runtime_once() -> None:
    server = FakeApiserver()
    server.lists[f"{API}/namespaces/team/trainjobs"] = [trainjob_cr(f"j{i}", 1) for i in range(5)]
    server.pods = [[pod(f"j{i}", "node", 0, "Running") for i in range(5)]]
    jobs = backend(server).list_jobs()
    assert [(j.name, j.status) for j in jobs] == [(f"j{i}", "Running") for i in range(5)]
    assert server.paths().count("GET /api/v1/namespaces/team/pods") == 1
    assert server.paths().count(f"GET {API}/clustertrainingruntimes/torch-distributed") == 1
    other = types.Runtime("other", jobs[0].runtime.trainer)
    assert backend(server).list_jobs(runtime=other) == []


def test_get_job_logs_reads_the_node_container_of_the_step_pod() -> None:
    server = FakeApiserver()
    server.objects[f"{API}/namespaces/team/trainjobs/j"] = trainjob_cr("j")
    server.pods = [[pod("j", "node", 0, "Running"), pod("j", "node", 1, "Running")]]
    server.logs["j-node-0-1-abcde"] = "line 1\nline 2\n"
    assert list(backend(server).get_job_logs("j", step="node-1")) == ["line 1", "line 2"]
    req = server.requests[-1]
    assert req.url.path == "/api/v1/namespaces/team/pods/j-node-0-1-abcde/log"
    assert dict(req.url.params) == {"container": "node"}


def test_follow_waits_for_a_pending_step_then_streams_the_log() -> None:
    server = FakeApiserver()
    server.objects[f"{API}/namespaces/team/trainjobs/j"] = trainjob_cr("j", 1)
    server.pods = [
        [pod("j", "node", 0, "Pending")],
        [pod("j", "node", 0, "Pending")],
        [pod("j", "node", 0, "Running")],
    ]
    server.logs["j-node-0-0-abcde"] = "a\nb\n"
    assert list(backend(server).get_job_logs("j", follow=True)) == ["a", "b"]
    assert server.paths().count("GET /api/v1/namespaces/team/pods") >= 3  # looked until Running
    log = [r for r in server.requests if r.url.path.endswith("/log")]
    assert [dict(r.url.params) for r in log] == [{"container": "node", "follow": "true"}]


def test_logs_of_a_pending_step_without_follow_are_empty() -> None:
    server = FakeApiserver()
    server.objects[f"{API}/namespaces/team/trainjobs/j"] = trainjob_cr("j", 1)
    server.pods = [[pod("j", "node", 0, "Pending")]]
    assert list(backend(server).get_job_logs("j")) == []


def test_events_are_those_of_the_trainjob_and_its_pods_oldest_first() -> None:
    server = FakeApiserver()
    server.pods = [[pod("j", "node", 0, "Running")]]
    server.events = [
        {
            "involvedObject": {"kind": "Pod", "name": "j-node-0-0-abcde"},
            "reason": "Started",
            "message": "Started container node",
            "lastTimestamp": "2025-01-01T00:00:02Z",
        },
        {
            "involvedObject": {"kind": "Pod", "name": "other-pod"},
            "reason": "Started",
            "message": "x",
            "lastTimestamp": "2025-01-01T00:00:01Z",
        },
        {
            "involvedObject": {"kind": "TrainJob", "name": "j"},
            "reason": "Created",
            "message": "TrainJob created",
            "eventTime": "2025-01-01T00:00:00.000000Z",
        },
    ]
    events = backend(server).get_job_events("j")
    assert [(e.involved_object_kind, e.involved_object_name, e.reason) for e in events] == [
        ("TrainJob", "j", "Created"),
        ("Pod", "j-node-0-0-abcde", "Started"),
    ]


def test_delete_job_sends_delete_and_a_missing_job_is_a_runtime_error() -> None:
    server = FakeApiserver()
    server.objects[f"{API}/namespaces/team/trainjobs/j"] = trainjob_cr("j")
    be = backend(server)
    be.delete_job("j")
    assert server.paths()[-1] == f"DELETE {API}/namespaces/team/trainjobs/j"
    with pytest.raises(RuntimeError, match="Failed to delete TrainJob: team/j: 404 NotFound"):
        be.delete_job("j")


def test_an_apiserver_timeout_is_a_timeout_error() -> None:
    def slow(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("slow", request=request)

    conn = Config(server="https://k8s.example", namespace="default")
    be = KubernetesBackend(client=connect(conn, slow))
    with pytest.raises(TimeoutError, match="Timeout to get TrainJob: default/j"):
        be.get_job("j")


def test_too_many_requests_is_retried_as_client_go_does() -> None:
    server = FakeApiserver()
    server.objects[f"{API}/namespaces/team/trainjobs/j"] = trainjob_cr("j", 1)
    busy = {"left": 2}

    def handler(request: httpx.Request) -> httpx.Response:
        if busy["left"] and request.url.path.endswith("/trainjobs/j"):
            busy["left"] -= 1
            return httpx.Response(
                429, headers={"Retry-After": "0"}, json={"message": "storage is (re)initializing"}
            )
        return server(request)

    conn = Config(server="https://k8s.example", namespace="team")
    be = KubernetesBackend(client=connect(conn, handler))
    assert be.get_job("j").name == "j"
    assert busy["left"] == 0


def test_a_job_whose_runtime_was_deleted_is_still_reported() -> None:
    server = FakeApiserver()
    server.objects[f"{API}/namespaces/team/trainjobs/j"] = trainjob_cr("j", 1, runtime="gone")
    job = backend(server).get_job("j")
    assert (job.name, job.runtime.name, job.runtime.trainer.framework) == ("j", "gone", "Unknown")


@pytest.mark.parametrize("follow", [False, True])
def test_logs_of_a_node_beyond_the_jobs_nodes_are_refused_instead_of_awaited(follow: bool) -> None:
    server = FakeApiserver()
    server.objects[f"{API}/namespaces/team/trainjobs/j"] = trainjob_cr("j", 2)
    server.pods = [[pod("j", "node", 0, "Running"), pod("j", "node", 1, "Pending")]]
    with pytest.raises(ValueError, match=r"has no step node-2: it has 2 nodes \(node-0..node-1\)"):
        list(backend(server).get_job_logs("j", step="node-2", follow=follow))
    assert not any(p.endswith("/log") for p in server.paths())


class ChunkedLog(httpx.SyncByteStream):
    """A pod log the apiserver sends chunk by chunk; ``sent`` records what has gone out."""

    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = chunks
        self.sent: list[bytes] = []

    def __iter__(self) -> Iterator[bytes]:
        for chunk in self.chunks:
            self.sent.append(chunk)
            yield chunk


def test_follow_yields_each_line_before_the_next_chunk_is_sent() -> None:
    server = FakeApiserver()
    server.objects[f"{API}/namespaces/team/trainjobs/j"] = trainjob_cr("j", 1)
    server.pods = [[pod("j", "node", 0, "Running")]]
    log = ChunkedLog([b"epoch 0\n", b"epoch 1\nepo", b"ch 2\n"])
    base = server.__call__

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/log"):
            server.requests.append(request)
            return httpx.Response(200, stream=log)
        return base(request)

    conn = Config(server="https://k8s.example:6443", namespace="team", token="tok")
    lines = KubernetesBackend(client=connect(conn, handler)).get_job_logs("j", follow=True)
    got = []
    for line in lines:
        got.append((line, len(log.sent)))
    # each line is handed over as soon as its chunk arrived, not when the stream ends
    assert got == [("epoch 0", 1), ("epoch 1", 2), ("epoch 2", 3)]
