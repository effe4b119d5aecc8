"""The MPI SSH Secret: made once, kept through re-reconciles, resume and a controller restart
(the controller never reads a Secret's data: a second key pair is refused with AlreadyExists),
made again when deleted while the TrainJob is suspended - by the Secret watch, with no change to
the TrainJob - and the private key appears in no log line (at DEBUG), no Event and no status, also
when creating the Secret is refused (by a ValidatingAdmissionPolicy). Every request the controller
makes for Secrets, seen through a recording proxy, is a metadata-only list or watch
(``PartialObjectMetadata``) or a create: never a GET of a Secret, an update, patch or delete."""

from __future__ import annotations

import base64
import contextlib
import http.server
import ssl
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pytest
import yaml
from tests.integration.controller_harness import (
    Controller,
    builtin_runtime,
    conditions,
    start_controller,
    trainjob,
    wait_for,
)

from trainjob.kube import Client
from trainjob.kube import resources as r
from trainjob.kube.client import METADATA, METADATA_LIST
from trainjob.kube.errors import ApiError
from trainjob.kube.resources import Resource

if TYPE_CHECKING:
    from tests.integration.conftest import ControlPlane

pytest_plugins = ["tests.integration.controller_fixtures"]
pytestmark = pytest.mark.integration
Obj = dict[str, Any]
SECRET = "{}-mpi-ssh-auth"
POLICIES = Resource(
    "admissionregistration.k8s.io",
    "v1",
    "validatingadmissionpolicies",
    "ValidatingAdmissionPolicy",
    namespaced=False,
)
BINDINGS = Resource(
    "admissionregistration.k8s.io",
    "v1",
    "validatingadmissionpolicybindings",
    "ValidatingAdmissionPolicyBinding",
    namespaced=False,
)


def key_material(secret: Obj) -> list[str]:
    """Strings that would betray the private key: its base64 data and each PEM body line."""
    data = secret["data"]["ssh-privatekey"]
    pem = base64.b64decode(data).decode()
    lines = [ln for ln in pem.splitlines() if ln and not ln.startswith("-----")]
    return [data, data[:40], *lines]


def leaks(ctl: Controller, kube: Client, namespace: str, material: list[str]) -> list[str]:
    where = {"controller log": ctl.log()}
    events, _ = kube.list_all(r.EVENTS, namespace)
    where["events"] = "\n".join(str(e.get("note")) for e in events)
    trainjobs, _ = kube.list_all(r.TRAINJOBS, namespace)
    where["status"] = "\n".join(str(t.get("status")) for t in trainjobs)
    return [
        f"{m[:16]}... in the {name}"
        for name, text in where.items()
        for m in [*material, "PRIVATE KEY"]
        if m in text
    ]


def refuse_secrets(kube: Client, namespace: str) -> None:
    """A ValidatingAdmissionPolicy (CEL, in the apiserver) refusing new Secrets in ``namespace``."""
    name = f"no-secrets-{namespace}"[:63]
    kube.apply(
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": name},
            "spec": {
                "failurePolicy": "Fail",
                "matchConstraints": {
                    "resourceRules": [
                        {
                            "apiGroups": [""],
                            "apiVersions": ["v1"],
                            "operations": ["CREATE"],
                            "resources": ["secrets"],
                        }
                    ]
                },
                "validations": [{"expression": "false", "message": "no new secrets here"}],
            },
        },
        resource=POLICIES,
        field_manager="trainjob-tests",
    )
    kube.apply(
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": {"name": name},
            "spec": {
                "policyName": name,
                "validationActions": ["Deny"],
                "matchResources": {
                    "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}}
                },
            },
        },
        resource=BINDINGS,
        field_manager="trainjob-tests",
    )

    def refused() -> bool:
        probe = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "probe"}}
        try:
            kube.create(r.SECRETS, probe, namespace, dry_run=True)
        except ApiError as e:
            return "no new secrets here" in str(e)
        return False

    wait_for(refused, what="the policy in force")


def drop_policy(kube: Client, namespace: str) -> None:
    name = f"no-secrets-{namespace}"[:63]
    kube.delete(BINDINGS, name, ignore_not_found=True)
    kube.delete(POLICIES, name, ignore_not_found=True)


def poke(kube: Client, name: str, namespace: str, n: int) -> None:
    kube.patch(r.TRAINJOBS, name, {"metadata": {"labels": {"poke": str(n)}}}, namespace)


def test_the_ssh_key_is_made_once_and_never_shown(
    control_plane: ControlPlane, kube: Client, namespace: str
) -> None:
    kube.apply(builtin_runtime("mpi-distributed"), field_manager="trainjob-tests")
    ctl = start_controller(control_plane, "--log-level", "DEBUG")
    try:
        kube.create(
            r.TRAINJOBS, trainjob("mpi", namespace, runtime="mpi-distributed", suspend=True)
        )
        wait_for(lambda: kube.get_or_none(r.JOBSETS, "mpi", namespace), what="JobSet")
        first = kube.get(r.SECRETS, SECRET.format("mpi"), namespace)
        material = key_material(first)
        for i in range(3):  # suspended: every reconcile re-applies
            poke(kube, "mpi", namespace, i)
        time.sleep(1)
        kube.patch(r.TRAINJOBS, "mpi", {"spec": {"suspend": False}}, namespace)
        wait_for(
            lambda: kube.get(r.JOBSETS, "mpi", namespace)["spec"]["suspend"] is False,
            what="resumed",
        )
        assert kube.get(r.SECRETS, SECRET.format("mpi"), namespace)["data"] == first["data"]
        assert leaks(ctl, kube, namespace, material) == []
    finally:
        ctl.stop()

    # A fresh controller remembers nothing: its new key pair meets AlreadyExists.
    ctl = start_controller(control_plane, "--log-level", "DEBUG")
    try:
        kube.patch(r.TRAINJOBS, "mpi", {"spec": {"suspend": True}}, namespace)
        wait_for(lambda: conditions(kube, "mpi", namespace).get("Suspended"), what="Suspended")
        wait_for(
            lambda: conditions(kube, "mpi", namespace)["Suspended"]["status"] == "True",
            what="Suspended=True",
        )
        poke(kube, "mpi", namespace, 9)
        time.sleep(1)
        assert kube.get(r.SECRETS, SECRET.format("mpi"), namespace)["data"] == first["data"]

        # Deleted while suspended, it is made again (a new key): the watch alone brings it back.
        before = kube.get(r.TRAINJOBS, "mpi", namespace)["metadata"]
        kube.delete(r.SECRETS, SECRET.format("mpi"), namespace)
        again = wait_for(
            lambda: kube.get_or_none(r.SECRETS, SECRET.format("mpi"), namespace), what="remade"
        )
        assert again["data"]["ssh-privatekey"] != first["data"]["ssh-privatekey"]
        material += key_material(again)
        after = kube.get(r.TRAINJOBS, "mpi", namespace)["metadata"]
        assert (after["generation"], after.get("labels")) == (
            before["generation"],
            before.get("labels"),
        )

        # Creating the Secret fails: the error is told without the key.
        refuse_secrets(kube, namespace)
        kube.create(r.TRAINJOBS, trainjob("refused", namespace, runtime="mpi-distributed"))

        def warning() -> Obj | None:
            items, _ = kube.list_all(r.EVENTS, namespace)
            return next(
                (e for e in items if e["regarding"]["name"] == "refused"),
                None,
            )

        event = wait_for(warning, what="TrainJobResourcesCreationFailed")
        assert event["reason"] == "TrainJobResourcesCreationFailed"
        assert "no new secrets here" in event["note"], event["note"]
        assert kube.get_or_none(r.SECRETS, SECRET.format("refused"), namespace) is None
        assert leaks(ctl, kube, namespace, material) == []
        assert "PRIVATE KEY" not in ctl.log()
    finally:
        ctl.stop()
        drop_policy(kube, namespace)


class RecordingProxy:
    """A plain-HTTP reverse proxy to the apiserver that records (method, path, query, Accept) of
    every request for Secrets; responses (watch streams too) are passed through as they come."""

    def __init__(self, control_plane: ControlPlane) -> None:
        self.seen: list[tuple[str, str, str, str]] = []
        upstream = httpx.Client(
            base_url=control_plane.server,
            verify=ssl.create_default_context(cafile=str(control_plane.ca_file)),
            timeout=None,
        )
        seen = self.seen

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *_: Any) -> None:
                pass

            def _forward(self) -> None:
                path, _, query = self.path.partition("?")
                if "/secrets" in path:
                    seen.append((self.command, path, query, self.headers.get("Accept", "")))
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                # the client's Accept-Encoding goes through (trainjob's asks for identity): with
                # httpx's own gzip, a list over the apiserver's compression threshold (a shared
                # apiserver late in a run) came back gzipped to a client that had not asked
                skip = {"host", "connection", "content-length"}
                headers = {k: v for k, v in self.headers.items() if k.lower() not in skip}
                with (
                    contextlib.suppress(OSError, httpx.HTTPError),
                    upstream.stream(self.command, self.path, headers=headers, content=body) as resp,
                ):
                    self.send_response(resp.status_code)
                    for k, v in resp.headers.items():
                        if k.lower() not in {"transfer-encoding", "connection", "content-length"}:
                            self.send_header(k, v)
                    self.end_headers()
                    for chunk in resp.iter_raw():
                        self.wfile.write(chunk)
                        self.wfile.flush()

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _forward

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.upstream = upstream
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def kubeconfig(self, control_plane: ControlPlane, path: Path) -> Path:
        server = f"http://127.0.0.1:{self.server.server_address[1]}"
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "proxy", "cluster": {"server": server}}],
            "users": [{"name": "admin", "user": {"token": control_plane.token}}],
            "contexts": [{"name": "proxy", "context": {"cluster": "proxy", "user": "admin"}}],
            "current-context": "proxy",
        }
        path.write_text(yaml.safe_dump(config))
        return path

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.upstream.close()


def test_secrets_are_watched_as_metadata_only_and_a_deleted_one_comes_back(
    control_plane: ControlPlane, kube: Client, namespace: str, tmp_path: Path
) -> None:
    kube.apply(builtin_runtime("mpi-distributed"), field_manager="trainjob-tests")
    proxy = RecordingProxy(control_plane)
    kubeconfig = proxy.kubeconfig(control_plane, tmp_path / "kubeconfig")
    ctl = start_controller(
        control_plane, "--log-level", "DEBUG", kubeconfig=kubeconfig, webhooks=False
    )
    try:
        kube.create(
            r.TRAINJOBS, trainjob("watched", namespace, runtime="mpi-distributed", suspend=True)
        )
        name = SECRET.format("watched")
        first = wait_for(lambda: kube.get_or_none(r.SECRETS, name, namespace), what="Secret")
        wait_for(lambda: conditions(kube, "watched", namespace).get("Suspended"), what="status")
        # the reconciles of the creation are over once the TrainJob stays put for 2 s (a loaded
        # machine may write its status more than a second after the Suspended condition)
        seen_job = kube.get(r.TRAINJOBS, "watched", namespace)
        for _ in range(30):
            time.sleep(2)
            now = kube.get(r.TRAINJOBS, "watched", namespace)
            if now["metadata"]["resourceVersion"] == seen_job["metadata"]["resourceVersion"]:
                break
            seen_job = now
        before = seen_job["metadata"]["resourceVersion"]

        kube.delete(r.SECRETS, name, namespace)
        again = wait_for(
            lambda: kube.get_or_none(r.SECRETS, name, namespace), timeout=60, what="remade"
        )
        assert again["metadata"]["uid"] != first["metadata"]["uid"]
        assert again["data"]["ssh-privatekey"] != first["data"]["ssh-privatekey"]
        # Nothing touched the TrainJob: the Secret watch alone brought it back.
        after = kube.get(r.TRAINJOBS, "watched", namespace)
        assert after["metadata"]["resourceVersion"] == before, (seen_job, after)

        material = key_material(first) + key_material(again)
        assert leaks(ctl, kube, namespace, material) == []
    finally:
        ctl.stop()
        proxy.close()

    reads = [s for s in proxy.seen if s[0] == "GET"]
    lists = [s for s in reads if "watch=true" not in s[2]]
    watches = [s for s in reads if "watch=true" in s[2]]
    assert lists and watches, proxy.seen
    assert {s[0] for s in proxy.seen} <= {"GET", "POST"}, proxy.seen
    assert all(s[1] == "/api/v1/secrets" for s in reads), reads  # never a Secret by name
    assert {s[3] for s in lists} == {METADATA_LIST}, lists
    assert {s[3] for s in watches} == {METADATA}, watches
    creates = [s[1] for s in proxy.seen if s[0] == "POST"]
    assert all(p.startswith("/api/v1/namespaces/") and p.endswith("/secrets") for p in creates)
    # Other tests' TrainJobs may still be about; here at least the first Secret and its remake.
    assert creates.count(f"/api/v1/namespaces/{namespace}/secrets") >= 2, creates
