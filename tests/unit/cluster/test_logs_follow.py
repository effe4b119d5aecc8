"""The Kubernetes executor's ``logs -f``: after a followed pod's log ends, the pod that takes over the step.

Pod logs come from a kubelet, and no kubelet can run here (the test control plane has none: its
apiserver serves an empty log), so this test talks to a stand-in for the API: an in-memory set of
pods whose log streams change the cluster when they end, as a JobSet restart or a Job's retry
would. What it pins is the rule in ``KubernetesExecutor._successor``; the integration tests
(tests/integration/test_cli_kubernetes.py) run the rest against a real apiserver.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from trainjob.cluster.executor import KubernetesExecutor
from trainjob.kube import resources as r


def pod(
    name: str, phase: str, attempt: int = 0, created: str = "2026-11-30T01:00:00Z"
) -> dict[str, Any]:
    return {
        "metadata": {
            "name": name,
            "creationTimestamp": created,
            "labels": {
                "jobset.sigs.k8s.io/jobset-name": "tj",
                "jobset.sigs.k8s.io/replicatedjob-name": "node",
                "batch.kubernetes.io/job-completion-index": "0",
                "jobset.sigs.k8s.io/restart-attempt": str(attempt),
            },
        },
        "spec": {"containers": [{"name": "node"}]},
        "status": {"phase": phase},
    }


class StandIn:
    """The few API calls KubernetesExecutor makes, over in-memory pods; ``after[name]`` runs when that
    pod's log stream ends."""

    def __init__(self, pods: list[dict[str, Any]], logs: dict[str, list[str]]) -> None:
        self.pods = {p["metadata"]["name"]: p for p in pods}
        self.lines = logs
        self.after: dict[str, Callable[[], None]] = {}
        self.finished = False
        self.asked: list[dict[str, Any]] = []  # each log request's tail_lines and timestamps

    def get(self, res: Any, name: str, ns: str | None = None) -> dict[str, Any]:
        assert res is r.TRAINJOBS
        done = [{"type": "Complete", "status": "True"}] if self.finished else []
        return {"metadata": {"name": name, "namespace": ns}, "status": {"conditions": done}}

    def get_or_none(self, res: Any, name: str, ns: str | None = None) -> dict[str, Any] | None:
        return self.pods.get(name) if res is r.PODS else None

    def list(self, res: Any, ns: str | None = None, **_: Any) -> dict[str, Any]:
        assert res is r.PODS
        return {"items": list(self.pods.values())}

    def logs(self, name: str, ns: str | None = None, **kw: Any) -> Iterator[str]:
        asked: dict[str, Any] = {k: kw.pop(k) for k in ("tail_lines", "timestamps") if k in kw}
        assert kw == {"container": "node", "follow": True}
        self.asked.append(asked)
        lines = self.lines.get(name, [])
        tail = asked.get("tail_lines")
        yield from lines if tail is None else lines[len(lines) - tail :]
        self.after.pop(name, lambda: None)()


def follow(api: StandIn, **kw: Any) -> list[str]:
    ex = KubernetesExecutor(kube=api)
    ex.poll_interval = 0.0
    return list(ex.logs("tj", "ns", "node", 0, follow=True, **kw))


def test_a_jobset_restart_hands_over_to_the_new_pod() -> None:
    api = StandIn([pod("a", "Running")], {"a": ["a1", "a2"], "b": ["b1"]})

    def restart() -> None:  # the JobSet deletes the pods and creates them again
        del api.pods["a"]
        api.pods["b"] = pod("b", "Running", attempt=1, created="2026-11-30T01:05:00Z")
        api.after["b"] = lambda: api.pods["b"]["status"].update(phase="Succeeded")

    api.after["a"] = restart
    assert follow(api) == ["a1", "a2", "b1"]


def test_a_failed_pod_is_followed_by_the_job_s_retry_once_it_runs() -> None:
    api = StandIn([pod("a", "Running")], {"a": ["boom"], "b": ["again", "ok"]})
    polls = 0

    def failed() -> None:
        api.pods["a"]["status"]["phase"] = "Failed"
        api.pods["b"] = pod("b", "Pending", created="2026-11-30T01:01:00Z")

    real_list = api.list

    def listing(res: Any, ns: str | None = None, **kw: Any) -> dict[str, Any]:
        nonlocal polls
        polls += 1
        if polls == 2:  # the retry starts running while we wait
            api.pods["b"]["status"]["phase"] = "Running"
        return real_list(res, ns, **kw)

    api.list = listing  # type: ignore[method-assign]
    api.after["a"] = failed
    api.after["b"] = lambda: api.pods["b"]["status"].update(phase="Succeeded")
    assert follow(api) == ["boom", "again", "ok"]


def test_a_pod_that_succeeded_ends_the_follow_without_looking_further() -> None:
    api = StandIn([pod("a", "Running")], {"a": ["done"]})
    api.after["a"] = lambda: api.pods["a"]["status"].update(phase="Succeeded")
    listed = 0
    real_list = api.list

    def listing(res: Any, ns: str | None = None, **kw: Any) -> dict[str, Any]:
        nonlocal listed
        listed += 1
        return real_list(res, ns, **kw)

    api.list = listing  # type: ignore[method-assign]
    assert follow(api) == ["done"]
    assert listed == 1  # the step's pod was looked up once; no successor was searched for


def test_a_stream_that_closes_while_the_pod_runs_ends_the_follow_as_kubectl_does() -> None:
    api = StandIn([pod("a", "Running")], {"a": ["partial"]})
    assert follow(api) == ["partial"]


def test_a_failed_pod_with_no_retry_ends_when_the_job_finishes() -> None:
    api = StandIn([pod("a", "Running")], {"a": ["boom"]})

    def failed() -> None:
        api.pods["a"]["status"]["phase"] = "Failed"
        api.finished = True

    api.after["a"] = failed
    assert follow(api) == ["boom"]


def test_tail_cuts_the_first_pod_s_log_only_and_timestamps_ask_every_pod() -> None:
    """``logs -f --tail 1 --timestamps`` across a restart: the last line of the pod followed
    first, then the whole log of the pod that takes over (kubectl would have shown it whole)."""
    api = StandIn([pod("a", "Running")], {"a": ["a1", "a2"], "b": ["b1", "b2"]})

    def restart() -> None:
        del api.pods["a"]
        api.pods["b"] = pod("b", "Running", attempt=1, created="2026-11-30T01:05:00Z")
        api.after["b"] = lambda: api.pods["b"]["status"].update(phase="Succeeded")

    api.after["a"] = restart
    assert follow(api, tail=1, timestamps=True) == ["a2", "b1", "b2"]
    assert api.asked == [
        {"tail_lines": 1, "timestamps": True},
        {"tail_lines": None, "timestamps": True},
    ]
