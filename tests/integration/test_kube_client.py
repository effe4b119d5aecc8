"""The kube client and the informer against the real apiserver: paging, metadata-only reads,
server-side apply ownership, watches, a cache that follows create/update/delete,
and a stop that returns at once."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from tests.integration.controller_harness import wait_for

from trainjob.kube import Client
from trainjob.kube import resources as r
from trainjob.kube.errors import AlreadyExists, Conflict, Invalid, NotFound
from trainjob.kube.informer import Informer

pytest_plugins = ["tests.integration.controller_fixtures"]
pytestmark = pytest.mark.integration
Obj = dict[str, Any]


def cm(name: str, ns: str, **data: str) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": ns},
        "data": data,
    }


def test_crud_apply_and_errors(kube: Client, namespace: str) -> None:
    created = kube.create(r.CONFIGMAPS, cm("a", namespace, k="1"))
    with pytest.raises(AlreadyExists):
        kube.create(r.CONFIGMAPS, cm("a", namespace))
    stale = dict(created)
    kube.patch(r.CONFIGMAPS, "a", {"data": {"k": "2"}}, namespace)
    with pytest.raises(Conflict):
        kube.replace(r.CONFIGMAPS, stale)
    applied = kube.apply(cm("a", namespace, k="3", other="x"))
    assert applied["data"] == {"k": "3", "other": "x"}
    assert any(
        m["manager"] == "trainjob" and m["operation"] == "Apply"
        for m in applied["metadata"]["managedFields"]
    )
    with pytest.raises(Invalid) as info:
        kube.create(r.CONFIGMAPS, cm("Not_Valid", namespace))
    assert info.value.causes and info.value.causes[0].field == "metadata.name"
    kube.delete(r.CONFIGMAPS, "a", namespace)
    with pytest.raises(NotFound):
        kube.get(r.CONFIGMAPS, "a", namespace)
    assert kube.delete(r.CONFIGMAPS, "a", namespace, ignore_not_found=True) is None


def test_list_all_follows_continue_tokens_and_metadata_only_drops_data(
    kube: Client, namespace: str
) -> None:
    for i in range(7):
        kube.create(r.CONFIGMAPS, cm(f"p{i}", namespace, secret="value"))
    items, rv = kube.list_all(r.CONFIGMAPS, namespace, page_size=2, metadata_only=True)
    names = sorted(i["metadata"]["name"] for i in items if i["metadata"]["name"].startswith("p"))
    assert names == [f"p{i}" for i in range(7)]
    assert rv
    assert all("data" not in i and i["kind"] == "PartialObjectMetadata" for i in items)


def test_an_informer_follows_changes_and_stops_promptly(kube: Client, namespace: str) -> None:
    kube.create(r.CONFIGMAPS, cm("before", namespace))
    seen: list[tuple[str, str]] = []
    informer = Informer(kube, r.CONFIGMAPS, namespace=namespace, metadata_only=True)
    informer.add_handler(lambda t, obj, _old: seen.append((t, obj["metadata"]["name"])))
    informer.start()
    try:
        assert informer.synced.wait(60)
        assert informer.get(f"{namespace}/before") is not None
        kube.create(r.CONFIGMAPS, cm("x", namespace))
        kube.patch(r.CONFIGMAPS, "x", {"metadata": {"labels": {"a": "b"}}}, namespace)
        wait_for(
            lambda: (
                (informer.get(f"{namespace}/x") or {}).get("metadata", {}).get("labels")
                == {"a": "b"}
            ),
            what="the label in the cache",
        )
        kube.delete(r.CONFIGMAPS, "x", namespace)
        wait_for(lambda: informer.get(f"{namespace}/x") is None, what="the delete in the cache")
        assert ("ADDED", "before") in seen
        assert [e for e in seen if e[1] == "x"] == [
            ("ADDED", "x"),
            ("MODIFIED", "x"),
            ("DELETED", "x"),
        ]
    finally:
        started = time.monotonic()
        informer.stop()
        informer.join(30)
    # the watch would time out after minutes (300 s); 10 s leaves a loaded machine room
    assert time.monotonic() - started < 10, "stop must not wait for the watch to time out"


def test_a_watch_from_a_resource_version_delivers_events_and_can_be_stopped(
    kube: Client, namespace: str
) -> None:
    _, rv = kube.list_all(r.CONFIGMAPS, namespace)
    watch = kube.watch(r.CONFIGMAPS, namespace, resource_version=rv, timeout_seconds=30)
    events: list[str] = []
    t = threading.Thread(target=lambda: events.extend(e.type for e in watch))
    t.start()
    kube.create(r.CONFIGMAPS, cm("w", namespace))
    wait_for(lambda: "ADDED" in events, what="ADDED")
    watch.stop()
    t.join(10)  # the watch's own timeout is 30 s
    assert not t.is_alive()
