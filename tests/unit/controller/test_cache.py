"""What the informers keep (trainjob.controller.cache) and how an Informer applies a transform to
listed, watched and written-through objects (a fake client feeds it; the real apiserver is in
tests/integration/test_controller.py)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

from trainjob.controller import cache
from trainjob.kube import resources as r
from trainjob.kube.informer import Informer
from trainjob.kube.watch import WatchEvent

Obj = dict[str, Any]
ANCESTOR = "trainer.kubeflow.org/trainjob-ancestor-step"


def jobset(name: str, owner: str | None = "tj", rv: str = "1", **status: Any) -> Obj:
    meta: Obj = {
        "name": name,
        "namespace": "ns",
        "uid": f"uid-{name}",
        "resourceVersion": rv,
        "labels": {"a": "b"},
        "annotations": {"big": "x" * 100},
        "managedFields": [{"manager": "trainjob", "fieldsV1": {"f:spec": {}}}],
    }
    if owner is not None:
        meta["ownerReferences"] = [
            {
                "apiVersion": "trainer.kubeflow.org/v1alpha1",
                "kind": "TrainJob",
                "name": owner,
                "uid": "u",
                "controller": True,
            }
        ]
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": meta,
        "spec": {
            "suspend": False,
            "replicatedJobs": [
                {
                    "name": "node",
                    "replicas": 1,
                    "template": {
                        "metadata": {"labels": {ANCESTOR: "trainer", "x": "y"}},
                        "spec": {"template": {"spec": {"containers": [{"name": "node"}]}}},
                    },
                }
            ],
        },
        "status": status,
    }


def test_a_trainjobs_jobset_keeps_identity_owners_suspend_its_jobs_and_status() -> None:
    got = cache.jobset_view(jobset("a", restarts=2))
    assert got == {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {
            "name": "a",
            "namespace": "ns",
            "uid": "uid-a",
            "resourceVersion": "1",
            "ownerReferences": jobset("a")["metadata"]["ownerReferences"],
        },
        "spec": {
            "suspend": False,
            "replicatedJobs": [
                {
                    "name": "node",
                    "replicas": 1,
                    "template": {"metadata": {"labels": {ANCESTOR: "trainer"}}},
                }
            ],
        },
        "status": {"restarts": 2},
    }


def test_a_jobset_no_trainjob_controls_is_not_kept() -> None:
    assert cache.jobset_view(jobset("a", owner=None)) is None
    other = jobset("b")
    other["metadata"]["ownerReferences"][0]["kind"] = "Workload"
    assert cache.jobset_view(other) is None


def test_managed_fields_are_dropped() -> None:
    obj = jobset("a")
    assert "managedFields" not in cache.without_managed_fields(obj)["metadata"]
    assert cache.without_managed_fields({"kind": "X"}) == {"kind": "X"}


class FakeClient:
    """list_all and watch from canned objects and events."""

    def __init__(self, items: list[Obj], events: list[WatchEvent]) -> None:
        self.items, self.events = items, events
        self.watched = threading.Event()

    def list_all(self, *a: Any, **kw: Any) -> tuple[list[Obj], str]:
        return self.items, "10"

    def watch(self, *a: Any, **kw: Any) -> Any:
        client = self

        class W:
            def __iter__(self) -> Iterator[WatchEvent]:
                yield from client.events
                client.events = []
                client.watched.set()
                threading.Event().wait(0.05)

            def stop(self) -> None:
                pass

        return W()


def test_the_informer_caches_what_the_transform_keeps_and_forgets_what_it_drops() -> None:
    seen: list[tuple[str, str]] = []
    events = [
        WatchEvent("ADDED", jobset("c", rv="11")),
        WatchEvent("ADDED", jobset("orphan", owner=None, rv="12")),
        WatchEvent("MODIFIED", jobset("a", owner=None, rv="13")),  # its owner reference went
    ]
    client = FakeClient([jobset("a"), jobset("b", owner=None)], events)
    inf = Informer(client, r.JOBSETS, transform=cache.jobset_view)  # type: ignore[arg-type]
    inf.add_handler(lambda t, obj, _old: seen.append((t, obj["metadata"]["name"])))
    inf.start()
    try:
        assert client.watched.wait(5)
        assert [o["metadata"]["name"] for o in inf.list()] == ["c"]
        (kept,) = (inf.get("ns/c") or {})["spec"]["replicatedJobs"]
        assert "spec" not in kept["template"], "no pod template cached"
        assert seen == [("ADDED", "a"), ("ADDED", "c"), ("DELETED", "a")]
        inf.update_if_newer(jobset("d", rv="20"))
        inf.update_if_newer(jobset("e", owner=None, rv="21"))
        assert inf.get("ns/d") == cache.jobset_view(jobset("d", rv="20"))
        assert inf.get("ns/e") is None
    finally:
        inf.stop()


def test_cached_objects_share_their_key_strings() -> None:
    """Two objects decoded apart hold one string per key name (json.loads makes one per key of
    each object): a cache of thousands of TrainJobs pays for each name once."""
    import json

    a, b = (
        cache.without_managed_fields(json.loads(json.dumps({"metadata": {"name": n}, "spec": {}})))
        for n in ("a", "b")
    )
    key_a = next(k for k in a if k == "metadata")
    key_b = next(k for k in b if k == "metadata")
    assert key_a is key_b
    assert a == {"metadata": {"name": "a"}, "spec": {}}
    va = cache.jobset_view(jobset("a"))
    vb = cache.jobset_view(jobset("b"))
    assert va is not None and vb is not None
    assert next(iter(va["metadata"])) is next(iter(vb["metadata"]))


def test_copy_json_is_a_deep_copy() -> None:
    obj = {"a": [{"b": 1}, "c", None, 2.5, True], "d": {"e": {"f": []}}}
    got = cache.copy_json(obj)
    assert got == obj
    got["a"][0]["b"] = 2
    got["d"]["e"]["f"].append(1)
    assert obj == {"a": [{"b": 1}, "c", None, 2.5, True], "d": {"e": {"f": []}}}


def configmap(name: str, rv: str) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": name,
            "namespace": "ns",
            "resourceVersion": rv,
            "ownerReferences": [{"kind": "TrainJob", "name": "tj", "controller": True}],
            "managedFields": [{"manager": "trainjob"}],
        },
        "data": {"secret-ish": "x" * 50},
    }


def test_an_object_our_own_write_cached_calls_no_handler_when_its_watch_event_comes() -> None:
    """The reconcile that wrote an object knew it: the watch's copy of that version enqueues
    nothing (a new TrainJob's own ConfigMaps, JobSet and status write came back to the queue
    as four no-op reconciles); a later version, and one written by anybody else, do. A
    metadata-only informer keeps only the metadata of what was written through."""
    seen: list[tuple[str, str]] = []
    go = threading.Event()
    meta = {k: v for k, v in configmap("mine", "11")["metadata"].items() if k != "managedFields"}
    events = [
        WatchEvent("ADDED", {"kind": "PartialObjectMetadata", "metadata": meta}),
        WatchEvent("ADDED", {"metadata": {**meta, "name": "theirs", "resourceVersion": "12"}}),
        WatchEvent("MODIFIED", {"metadata": {**meta, "resourceVersion": "13"}}),
    ]

    class Gated(FakeClient):
        def watch(self, *a: Any, **kw: Any) -> Any:
            go.wait(5)
            return super().watch(*a, **kw)

    client = Gated([], events)
    inf = Informer(
        client,  # type: ignore[arg-type]
        r.CONFIGMAPS,
        metadata_only=True,
        transform=cache.without_managed_fields,
    )
    inf.add_handler(lambda t, obj, _old: seen.append((t, obj["metadata"]["name"])))
    inf.start()
    try:
        assert inf.synced.wait(5)
        inf.update_if_newer(configmap("mine", "11"))
        assert inf.get("ns/mine") == {
            "apiVersion": "meta.k8s.io/v1",
            "kind": "PartialObjectMetadata",
            "metadata": meta,
        }
        go.set()
        assert client.watched.wait(5)
        assert seen == [("ADDED", "theirs"), ("MODIFIED", "mine")]
        assert (inf.get("ns/mine") or {})["metadata"]["resourceVersion"] == "13"
    finally:
        inf.stop()
