"""One phase of the differential test: show every case to the controller running now, wait until
nothing changes any more, and read back what it made (:class:`compare.Outcome` per case).

Each case gets its own namespace ``diff-<prefix>-<index>``; the objects are created by a few
threads at once (as users and tools do), every case's runtimes first and its TrainJobs a moment
later, in the case's order, every answer recorded: allowed or the apiserver's message
(a webhook's or the CRD's refusal), and its ``Warning`` headers. Then the phase waits until the
normalised state of every namespace has stayed the same for ``quiet`` seconds (controllers retry
with backoff, so a failing case settles once its events stop changing), applies the cases'
updates, and waits again.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from tests.integration.oracle import compare
from tests.integration.oracle.corpus import Case, placed

Obj = dict[str, Any]

LISTED = (
    ("TrainJob", "/apis/trainer.kubeflow.org/v1alpha1/trainjobs"),
    ("JobSet", "/apis/jobset.x-k8s.io/v1alpha2/jobsets"),
    ("ConfigMap", "/api/v1/configmaps"),
    ("Secret", "/api/v1/secrets"),
    ("PodGroup", "/apis/scheduling.x-k8s.io/v1alpha1/podgroups"),
    ("PodGroup.volcano", "/apis/scheduling.volcano.sh/v1beta1/podgroups"),
)
EVENTS = "/apis/events.k8s.io/v1/events"
RUNTIMES_SETTLE_SECONDS = 3.0

PLURALS = {
    "TrainJob": "trainjobs",
    "TrainingRuntime": "trainingruntimes",
    "ClusterTrainingRuntime": "clustertrainingruntimes",
}


@dataclass
class Api:
    """A minimal apiserver client that also returns ``Warning`` headers (the test needs them)."""

    server: str
    token: str
    ca_file: str

    def __post_init__(self) -> None:
        self.http = httpx.Client(
            base_url=self.server,
            verify=self.ca_file,
            headers={"Authorization": f"Bearer {self.token}", "Accept": "application/json"},
            timeout=30,
            limits=httpx.Limits(max_connections=32, max_keepalive_connections=32),
        )

    @classmethod
    def from_env_json(cls, path: Path) -> Api:
        env = json.loads(path.read_text())
        return cls(env["server"], env["token"], env["ca_file"])

    def call(
        self, method: str, path: str, body: Any = None, content_type: str = "application/json"
    ) -> tuple[int, Any, list[str]]:
        resp = self.http.request(
            method,
            path,
            content=None if body is None else json.dumps(body).encode(),
            headers={"Content-Type": content_type} if body is not None else {},
        )
        warnings = [_warning_text(w) for w in resp.headers.get_list("warning")]
        try:
            decoded = resp.json() if resp.content else None
        except ValueError:
            decoded = resp.text
        return resp.status_code, decoded, warnings

    def items(self, path: str) -> list[Obj]:
        status, body, _ = self.call("GET", path)
        if status == 404:
            return []
        if status != 200:
            raise RuntimeError(f"GET {path}: {status} {body}")
        return list(body.get("items") or [])

    def close(self) -> None:
        self.http.close()


def _warning_text(header: str) -> str:
    """``299 - "text"`` -> ``text`` (RFC 7234 warn-code, agent, quoted text)."""
    parts = header.split(" ", 2)
    text = parts[2] if len(parts) == 3 else header
    if text.startswith('"') and text.endswith('"'):
        text = text[1:-1].replace('\\"', '"').replace("\\\\", "\\")
    return text


def collection(doc: Obj, namespace: str) -> str:
    plural = PLURALS[doc["kind"]]
    if doc["kind"] == "ClusterTrainingRuntime":
        return f"/apis/trainer.kubeflow.org/v1alpha1/{plural}"
    return f"/apis/trainer.kubeflow.org/v1alpha1/namespaces/{namespace}/{plural}"


def admit(api: Api, what: str, method: str, path: str, body: Obj, ctype: str) -> compare.Admission:
    status, answer, warnings = api.call(method, path, body, ctype)
    if status in (200, 201):
        return compare.Admission(what, True, warnings=warnings)
    message = answer.get("message", "") if isinstance(answer, dict) else str(answer)
    return compare.Admission(what, False, message, warnings)


@dataclass
class Phase:
    """The cases' namespaces of one controller's run (``prefix`` like ``u`` or ``t``)."""

    api: Api
    cases: list[Case]
    prefix: str

    def namespace(self, i: int) -> str:
        return f"diff-{self.prefix}-{i:03d}"

    def create_namespaces(self) -> None:
        for i, case in enumerate(self.cases):
            meta: Obj = {"name": self.namespace(i)}
            if not case.webhooks:
                meta["labels"] = {"trainjob.dev/webhooks": "disabled"}
            status, body, _ = self.api.call(
                "POST",
                "/api/v1/namespaces",
                {"apiVersion": "v1", "kind": "Namespace", "metadata": meta},
            )
            if status != 201:
                raise RuntimeError(f"creating namespace {meta['name']}: {status} {body}")

    def run(
        self, threads: int = 8, quiet: float = 5.0, timeout: float = 240.0
    ) -> dict[str, compare.Outcome]:
        """Create, settle, update, settle; the outcome of every case."""
        self.create_namespaces()
        admissions: dict[int, list[compare.Admission]] = {i: [] for i in range(len(self.cases))}

        def create(i: int, trainjobs: bool) -> None:
            ns = self.namespace(i)
            for doc in self.cases[i].docs:
                if (doc["kind"] == "TrainJob") != trainjobs:
                    continue
                obj = placed(doc, ns)
                what = f"create {doc['kind']}/{doc['metadata']['name']}"
                admissions[i].append(
                    admit(self.api, what, "POST", collection(obj, ns), obj, "application/json")
                )

        # Runtimes first, then (once the controllers' caches have them) the TrainJobs: a webhook
        # reading a cache a moment behind would otherwise refuse a TrainJob whose runtime was
        # created just before it (upstream's does), which is a race, not a rule.
        with ThreadPoolExecutor(threads) as pool:
            list(pool.map(lambda i: create(i, False), range(len(self.cases))))
        time.sleep(RUNTIMES_SETTLE_SECONDS)
        with ThreadPoolExecutor(threads) as pool:
            list(pool.map(lambda i: create(i, True), range(len(self.cases))))
        self.settle(quiet, timeout)

        def update(i: int) -> None:
            case = self.cases[i]
            if case.update is None or not case.trainjobs:
                return
            name = case.trainjobs[-1]["metadata"]["name"]
            ns = self.namespace(i)
            path = f"/apis/trainer.kubeflow.org/v1alpha1/namespaces/{ns}/trainjobs/{name}"
            admissions[i].append(
                admit(self.api, f"update TrainJob/{name}", "PATCH", path, case.update,
                      "application/merge-patch+json")
            )  # fmt: skip

        if any(c.update for c in self.cases):
            with ThreadPoolExecutor(threads) as pool:
                list(pool.map(update, range(len(self.cases))))
            self.settle(quiet, timeout)
        state = self.state()
        out = {}
        for i, case in enumerate(self.cases):
            objects, events = state.get(self.namespace(i), ({}, []))
            out[case.name] = compare.Outcome(admissions[i], objects, compare.event_list(events))
        return out

    def state(self) -> dict[str, tuple[dict[str, Obj], list[Obj]]]:
        """Normalised objects and events of every case namespace of this phase."""
        mine = {self.namespace(i) for i in range(len(self.cases))}
        out: dict[str, tuple[dict[str, Obj], list[Obj]]] = {ns: ({}, []) for ns in mine}
        for kind, path in LISTED:
            for obj in self.api.items(path):
                ns = (obj.get("metadata") or {}).get("namespace")
                if ns not in mine:
                    continue
                obj.setdefault("kind", kind.split(".")[0])
                key = f"{kind}/{obj['metadata']['name']}"
                out[ns][0][key] = compare.normalise_object(obj, ns)
        for ev in self.api.items(EVENTS):
            ns = (ev.get("metadata") or {}).get("namespace")
            if ns in mine:
                out[ns][1].append(compare.normalise_event(ev, ns))
        return out

    def settle(self, quiet: float, timeout: float) -> None:
        """Wait until the state has not changed for ``quiet`` seconds (at most ``timeout``)."""
        deadline = time.monotonic() + timeout
        last = None
        since = time.monotonic()
        while time.monotonic() < deadline:
            now = json.dumps(
                {ns: (objs, compare.event_list(evs)) for ns, (objs, evs) in self.state().items()},
                sort_keys=True,
            )
            if now != last:
                last, since = now, time.monotonic()
            elif time.monotonic() - since >= quiet:
                return
            time.sleep(0.5)
        raise AssertionError(f"phase {self.prefix}: still changing after {timeout:.0f}s")


def install(api: Api, docs: Iterable[Obj]) -> list[compare.Admission]:
    """Create phase-wide objects (the built-in runtimes); every answer."""
    out = []
    for doc in docs:
        obj = placed(doc, "default")
        out.append(admit(api, f"create {doc['kind']}/{doc['metadata']['name']}", "POST",
                         collection(obj, "default"), obj, "application/json"))  # fmt: skip
    return out


def delete_cluster_runtimes(api: Api, timeout: float = 60) -> None:
    path = "/apis/trainer.kubeflow.org/v1alpha1/clustertrainingruntimes"
    for rt in api.items(path):
        api.call("DELETE", f"{path}/{rt['metadata']['name']}")
    deadline = time.monotonic() + timeout
    while api.items(path):
        if time.monotonic() > deadline:
            raise AssertionError("ClusterTrainingRuntimes not deleted")
        time.sleep(0.2)
