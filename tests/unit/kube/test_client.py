"""The REST client's wire format and error mapping, through httpx's MockTransport (the requests
the real apiserver answers are covered in tests/integration/test_kube_client.py)."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from trainjob.errors import AlreadyExistsError, NotFoundError
from trainjob.kube import errors, resources
from trainjob.kube.client import Client
from trainjob.kube.config import Config
from trainjob.kube.retry import Backoff, retry_on_conflict
from trainjob.kube.watch import parse_event

Obj = dict[str, Any]


def status(code: int, reason: str, message: str, **details: Any) -> Obj:
    body: Obj = {
        "kind": "Status",
        "apiVersion": "v1",
        "status": "Failure",
        "code": code,
        "reason": reason,
        "message": message,
    }
    if details:
        body["details"] = details
    return body


def client(handler: Any) -> Client:
    return Client(
        Config(server="https://k8s.test", token="tok"), transport=httpx.MockTransport(handler)
    )


def test_apply_sends_an_apply_patch_with_our_field_manager_and_force() -> None:
    seen: list[httpx.Request] = []

    def handler(req: httpx.Request) -> httpx.Response:
        seen.append(req)
        return httpx.Response(200, json=json.loads(req.content))

    obj = {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": "j", "namespace": "ns"},
        "spec": {},
    }
    client(handler).apply(obj)
    (req,) = seen
    assert req.method == "PATCH"
    assert req.url.path == "/apis/jobset.x-k8s.io/v1alpha2/namespaces/ns/jobsets/j"
    assert dict(req.url.params) == {"fieldManager": "trainjob", "force": "true"}
    assert req.headers["Content-Type"] == "application/apply-patch+yaml"
    assert req.headers["Authorization"] == "Bearer tok"


def test_apply_sends_characters_past_the_bmp_as_utf8_not_surrogate_escapes() -> None:
    """The apiserver parses an apply body as YAML, which refuses JSON's \\uD83C escapes (found
    by the differential test: Flux's entrypoint script holds emoji)."""
    seen: list[bytes] = []

    def handler(req: httpx.Request) -> httpx.Response:
        seen.append(req.content)
        return httpx.Response(200, json=json.loads(req.content))

    obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "ns"},
           "data": {"entrypoint.sh": 'echo "\U0001F300 flux"'}}  # fmt: skip
    client(handler).apply(obj)
    assert b"\\ud83c" not in seen[0].lower()
    assert "\U0001f300".encode() in seen[0]
    assert json.loads(seen[0]) == obj


def test_status_patches_go_to_the_status_subresource_as_merge_patches() -> None:
    seen: list[httpx.Request] = []

    def handler(req: httpx.Request) -> httpx.Response:
        seen.append(req)
        return httpx.Response(200, json={})

    client(handler).patch_status(resources.TRAINJOBS, "t", "ns", {"conditions": []})
    (req,) = seen
    assert req.url.path == "/apis/trainer.kubeflow.org/v1alpha1/namespaces/ns/trainjobs/t/status"
    assert req.headers["Content-Type"] == "application/merge-patch+json"
    assert json.loads(req.content) == {"status": {"conditions": []}}


def test_cluster_scoped_paths_have_no_namespace() -> None:
    assert resources.CLUSTER_TRAINING_RUNTIMES.path("ignored", "x") == (
        "/apis/trainer.kubeflow.org/v1alpha1/clustertrainingruntimes/x"
    )
    assert resources.CONFIGMAPS.path("ns") == "/api/v1/namespaces/ns/configmaps"


@pytest.mark.parametrize(
    ("code", "reason", "cls"),
    [
        pytest.param(404, "NotFound", errors.NotFound, id="404 is NotFound"),
        pytest.param(409, "AlreadyExists", errors.AlreadyExists, id="409 AlreadyExists"),
        pytest.param(409, "Conflict", errors.Conflict, id="409 Conflict"),
        pytest.param(410, "Expired", errors.Gone, id="410 is Gone"),
        pytest.param(422, "Invalid", errors.Invalid, id="422 is Invalid"),
        pytest.param(403, "Forbidden", errors.Forbidden, id="403 is Forbidden"),
        pytest.param(429, "TooManyRequests", errors.TooManyRequests, id="429 throttles"),
        pytest.param(503, "ServiceUnavailable", errors.ServerError, id="5xx is a ServerError"),
    ],
)
def test_error_answers_become_their_classes(
    code: int, reason: str, cls: type[errors.ApiError]
) -> None:
    k = client(lambda _r: httpx.Response(code, json=status(code, reason, f"msg {code}")))
    with pytest.raises(cls, match=f"msg {code}") as info:
        k.get(resources.JOBSETS, "x", "ns")
    assert info.value.status == code and info.value.reason == reason


def test_not_found_and_already_exists_are_also_trainjob_errors() -> None:
    assert issubclass(errors.NotFound, NotFoundError)
    assert issubclass(errors.AlreadyExists, AlreadyExistsError)


def test_invalid_errors_carry_their_causes() -> None:
    body = status(
        422,
        "Invalid",
        "x is invalid",
        causes=[{"reason": "FieldValueInvalid", "message": "bad", "field": "spec.a"}],
    )
    k = client(lambda _r: httpx.Response(422, json=body))
    with pytest.raises(errors.Invalid) as info:
        k.create(resources.CONFIGMAPS, {"metadata": {"name": "x"}}, "ns")
    assert info.value.causes == [errors.Cause("FieldValueInvalid", "bad", "spec.a")]


def test_a_connection_failure_is_unreachable() -> None:
    def handler(req: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=req)

    with pytest.raises(errors.Unreachable, match="connection refused") as info:
        client(handler).get(resources.JOBSETS, "x", "ns")
    assert errors.is_temporary(info.value)


def test_retry_on_conflict_reruns_until_it_succeeds() -> None:
    calls: list[int] = []

    def update() -> int:
        calls.append(1)
        if len(calls) < 4:
            raise errors.Conflict("changed", status=409)
        return len(calls)

    assert retry_on_conflict(update, Backoff(initial=0.001, steps=5)) == 4


@pytest.mark.parametrize(
    ("line", "want_type"),
    [
        pytest.param(
            b'{"type":"ADDED","object":{"metadata":{"resourceVersion":"7"}}}', "ADDED", id="added"
        ),
        pytest.param(
            b'{"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"9"}}}',
            "BOOKMARK",
            id="bookmark",
        ),
        pytest.param(b"   ", None, id="a blank keep-alive line is skipped"),
    ],
)
def test_watch_lines_parse_into_events(line: bytes, want_type: str | None) -> None:
    ev = parse_event(line)
    assert (ev.type if ev else None) == want_type


def test_a_watch_error_event_raises_gone_for_an_expired_resource_version() -> None:
    line = json.dumps(
        {"type": "ERROR", "object": status(410, "Expired", "too old resource version")}
    )
    with pytest.raises(errors.Gone, match="too old resource version"):
        parse_event(line)


def test_answers_with_retry_after_are_retried_like_client_go() -> None:
    answers = [
        httpx.Response(
            429,
            headers={"Retry-After": "0"},
            json=status(429, "TooManyRequests", "storage is (re)initializing"),
        ),
        httpx.Response(
            503, headers={"Retry-After": "0"}, json=status(503, "ServiceUnavailable", "busy")
        ),
        httpx.Response(200, json={"kind": "ConfigMap", "metadata": {"name": "x"}}),
    ]
    k = client(lambda _r: answers.pop(0))
    assert k.get(resources.CONFIGMAPS, "x", "ns")["metadata"]["name"] == "x"
    assert answers == []


def test_retries_stop_after_max_retries() -> None:
    calls: list[int] = []

    def handler(_r: httpx.Request) -> httpx.Response:
        calls.append(1)
        return httpx.Response(
            429, headers={"Retry-After": "0"}, json=status(429, "TooManyRequests", "slow")
        )

    k = Client(
        Config(server="https://k8s.test"), transport=httpx.MockTransport(handler), max_retries=2
    )
    with pytest.raises(errors.TooManyRequests):
        k.get(resources.CONFIGMAPS, "x", "ns")
    assert len(calls) == 3


def test_impersonation_sends_one_header_per_group() -> None:
    seen: list[httpx.Request] = []

    def handler(req: httpx.Request) -> httpx.Response:
        seen.append(req)
        return httpx.Response(200, json={})

    cfg = Config(
        server="https://k8s.test",
        token="t",
        impersonate="system:serviceaccount:ns:sa",
        impersonate_groups=("system:serviceaccounts", "system:authenticated"),
    )
    Client(cfg, transport=httpx.MockTransport(handler)).get(resources.CONFIGMAPS, "x", "ns")
    (req,) = seen
    assert req.headers["Impersonate-User"] == "system:serviceaccount:ns:sa"
    assert req.headers.get_list("Impersonate-Group") == [
        "system:serviceaccounts",
        "system:authenticated",
    ]


@pytest.mark.parametrize("code", [pytest.param(429, id="a 429"), pytest.param(500, id="a 500")])
def test_an_answer_without_retry_after_is_not_retried(code: int) -> None:
    calls: list[int] = []

    def handler(_r: httpx.Request) -> httpx.Response:
        calls.append(1)
        return httpx.Response(code, json=status(code, "TooManyRequests", "busy"))

    with pytest.raises(errors.ApiError, match="busy"):
        client(handler).get(resources.CONFIGMAPS, "x", "ns")
    assert calls == [1]


def test_no_answer_in_time_is_a_timeout() -> None:
    def handler(req: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("slow", request=req)

    with pytest.raises(errors.Timeout, match="slow") as info:
        client(handler).get(resources.JOBSETS, "x", "ns")
    assert isinstance(info.value, errors.Unreachable) and errors.is_temporary(info.value)


@pytest.mark.parametrize(
    ("follow", "params"),
    [
        pytest.param(False, {"container": "node"}, id="a log is read once"),
        pytest.param(True, {"container": "node", "follow": "true"}, id="a log is followed"),
    ],
)
def test_pod_logs_are_streamed_as_lines(follow: bool, params: dict[str, str]) -> None:
    seen: list[httpx.Request] = []

    def handler(req: httpx.Request) -> httpx.Response:
        seen.append(req)
        return httpx.Response(200, text='{"loss": 1}\nstep 2\n')

    lines = list(client(handler).logs("p", "ns", container="node", follow=follow))
    assert lines == ['{"loss": 1}', "step 2"]
    (req,) = seen
    assert req.url.path == "/api/v1/namespaces/ns/pods/p/log"
    assert dict(req.url.params) == params


def test_the_log_of_a_missing_pod_is_not_found() -> None:
    k = client(lambda _r: httpx.Response(404, json=status(404, "NotFound", 'pods "p" not found')))
    with pytest.raises(errors.NotFound, match='pods "p" not found'):
        list(k.logs("p", "ns"))


def test_logs_pass_kubectls_tail_previous_and_timestamps() -> None:
    seen: list[httpx.Request] = []

    def handler(req: httpx.Request) -> httpx.Response:
        seen.append(req)
        return httpx.Response(200, text="2026-01-01T00:00:00.000000001Z a\n")

    lines = list(
        client(handler).logs(
            "p", "ns", container="node", tail_lines=5, previous=True, timestamps=True
        )
    )
    assert lines == ["2026-01-01T00:00:00.000000001Z a"]
    assert seen[0].url.path == "/api/v1/namespaces/ns/pods/p/log"
    assert dict(seen[0].url.params) == {
        "container": "node",
        "tailLines": "5",
        "previous": "true",
        "timestamps": "true",
    }
    list(client(handler).logs("p", "ns", tail_lines=0))
    assert dict(seen[1].url.params) == {"tailLines": "0"}
