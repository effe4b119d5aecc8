"""Upstream Kubeflow Trainer's controller (``trainer-controller-manager`` v2.3.0) as a real
subprocess against a test control plane: the oracle of ``test_upstream_diff.py`` and the reference
of ``benchmarks/controller.py --upstream``.

:func:`build` runs ``hack/build-upstream-controller.sh`` (a no-op when cached) and returns where
the binary, the module's files and the CRDs are. :func:`start` runs the binary with upstream's
shipped ``controller_manager_config.yaml`` changed only where a laptop needs it: loopback ports,
no leader election, no internal cert management (a self-made certificate in controller-runtime's
default cert dir under a private ``TMPDIR``), plain-HTTP metrics. Its webhooks are registered from
upstream's own ``manifests/base/webhook`` (kustomize patches applied: configuration names, the
``webhook-validation: disabled`` objectSelector), with ``clientConfig.url`` pointing at the process,
as envtest's ``WebhookInstallOptions`` does, and with the ``trainjob.dev/webhooks=disabled``
namespace opt-out that trainjob's dev mode has, so both controllers can be shown objects no
webhook vetted.
"""

from __future__ import annotations

import base64
import copy
import json
import os
import shutil
import ssl
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from tests.integration.controller_harness import http_get

from trainjob.kube import Client, certs
from trainjob.kube import resources as r
from trainjob.kube.errors import ApiError, Forbidden
from trainjob.local.job import ports
from trainjob.local.job.ports import free_ports

REPO = Path(__file__).resolve().parents[2]
BUILD_SCRIPT = REPO / "hack" / "build-upstream-controller.sh"
VERSION = os.environ.get("TRAINER_VERSION", "v2.3.0")
Obj = dict[str, Any]

MUTATING_NAME = "defaulter.trainer.kubeflow.org"
VALIDATING_NAME = "validator.trainer.kubeflow.org"
NAMESPACE_OPT_OUT = "trainjob.dev/webhooks"  # same key as trainjob's dev webhooks

VOLCANO_PODGROUP_CRD: Obj = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "podgroups.scheduling.volcano.sh"},
    "spec": {
        "group": "scheduling.volcano.sh",
        "scope": "Namespaced",
        "names": {
            "plural": "podgroups",
            "singular": "podgroup",
            "kind": "PodGroup",
            "listKind": "PodGroupList",
        },
        "versions": [
            {
                "name": "v1beta1",
                "served": True,
                "storage": True,
                "subresources": {"status": {}},
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "x-kubernetes-preserve-unknown-fields": True,
                    }
                },
            }
        ],
    },
}
"""Volcano's PodGroup CRD is not in any module the proxy serves (``volcano.sh/apis`` has only the
Go types), so an open schema with its group, version and names stands in for it."""


@dataclass(frozen=True)
class Build:
    """What ``hack/build-upstream-controller.sh`` leaves in its cache dir."""

    dir: Path

    @property
    def binary(self) -> Path:
        return self.dir / "trainer-controller-manager"

    @property
    def module(self) -> Path:
        """The ``github.com/kubeflow/trainer/v2`` module's files (read-only)."""
        return self.dir / "module"

    @property
    def crds(self) -> list[Path]:
        """Upstream's trainer CRDs (not the scheduler-plugins PodGroup one)."""
        return sorted((self.dir / "crds").glob("trainer.kubeflow.org_*.yaml"))

    @property
    def podgroup_crd(self) -> Path:
        return self.dir / "crds" / "scheduling.x-k8s.io_podgroups.yaml"


def build(log: Path | None = None) -> Build:
    """Build (or find cached) the upstream controller; raise with the log tail if it fails."""
    env = {**os.environ, "TRAINER_VERSION": VERSION}
    out = subprocess.run(
        ["bash", str(BUILD_SCRIPT)], env=env, cwd=REPO, capture_output=True, text=True
    )
    if log is not None:
        log.write_text(out.stdout + out.stderr)
    if out.returncode != 0:
        tail = "\n".join((out.stdout + out.stderr).splitlines()[-40:])
        raise RuntimeError(f"hack/build-upstream-controller.sh failed ({out.returncode}):\n{tail}")
    d = subprocess.run(
        ["bash", str(BUILD_SCRIPT), "--print-dir"], env=env, capture_output=True, text=True
    ).stdout.strip()
    return Build(Path(d))


def webhook_configurations(b: Build, url_base: str, ca_bundle: bytes) -> list[Obj]:
    """Upstream's webhook configurations as its kustomization renders them, served at
    ``url_base`` (``https://127.0.0.1:PORT``) with ``ca_bundle``."""
    docs = [
        d
        for d in yaml.safe_load_all(
            (b.module / "manifests/base/webhook/manifests.yaml").read_text()
        )
        if d
    ]
    out = []
    for doc in docs:
        doc = copy.deepcopy(doc)
        mutating = doc["kind"] == "MutatingWebhookConfiguration"
        doc["metadata"] = {"name": MUTATING_NAME if mutating else VALIDATING_NAME}
        for i, hook in enumerate(doc["webhooks"]):
            path = hook["clientConfig"]["service"]["path"]
            hook["clientConfig"] = {
                "url": url_base + path,
                "caBundle": base64.b64encode(ca_bundle).decode(),
            }
            # patch_validating.yaml: the two runtime validators skip webhook-validation=disabled.
            if not mutating and i < 2:
                hook["objectSelector"] = {
                    "matchExpressions": [
                        {
                            "key": "trainer.kubeflow.org/webhook-validation",
                            "operator": "NotIn",
                            "values": ["disabled"],
                        }
                    ]
                }
            hook["namespaceSelector"] = {
                "matchExpressions": [
                    {"key": NAMESPACE_OPT_OUT, "operator": "NotIn", "values": ["disabled"]}
                ]
            }
        out.append(doc)
    return out


def configuration(b: Build, *, webhook_port: int, health_port: int, metrics_port: int) -> Obj:
    """Upstream's shipped Configuration, with loopback ports, no leader election and no cert
    management (everything else, e.g. ``TrainJob`` concurrency 5 and QPS 50/burst 100, as shipped)."""
    cfg: Obj = yaml.safe_load(
        (b.module / "manifests/base/manager/controller_manager_config.yaml").read_text()
    )
    cfg["health"]["healthProbeBindAddress"] = f"127.0.0.1:{health_port}"
    cfg["metrics"] = {"bindAddress": f"127.0.0.1:{metrics_port}", "secureServing": False}
    cfg["webhook"] = {"port": webhook_port, "host": "127.0.0.1"}
    cfg["leaderElection"]["leaderElect"] = False
    cfg["certManagement"]["enable"] = False
    return cfg


@dataclass
class Upstream:
    """One running ``trainer-controller-manager``."""

    proc: subprocess.Popen[bytes]
    kube: Client
    workdir: Path
    log_path: Path
    webhook_port: int
    health_port: int
    metrics_port: int
    registered: list[Obj] = field(default_factory=list)

    def ready(self) -> bool:
        return http_get(self.health_port, "/readyz")[0] == 200

    def metrics(self) -> str:
        return http_get(self.metrics_port, "/metrics")[1]

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def webhooks_serving(self) -> bool:
        """The TrainJob validator answers (controller-runtime 404s a path until it is set up)."""
        review = {
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "request": {
                "uid": "probe",
                "operation": "DELETE",
                "kind": {
                    "group": "trainer.kubeflow.org",
                    "version": "v1alpha1",
                    "kind": "TrainJob",
                },
                "resource": {
                    "group": "trainer.kubeflow.org",
                    "version": "v1alpha1",
                    "resource": "trainjobs",
                },
                "namespace": "default",
                "name": "probe",
                "oldObject": {
                    "apiVersion": "trainer.kubeflow.org/v1alpha1",
                    "kind": "TrainJob",
                    "metadata": {"name": "probe", "namespace": "default"},
                    "spec": {"runtimeRef": {"name": "probe"}},
                },
            },
        }
        req = urllib.request.Request(
            f"https://127.0.0.1:{self.webhook_port}/validate-trainer-kubeflow-org-v1alpha1-trainjob",
            data=json.dumps(review).encode(),
            headers={"Content-Type": "application/json"},
            method="POST",
        )
        ctx = ssl.create_default_context(cafile=str(self.workdir / "ca.crt"))
        try:
            with urllib.request.urlopen(req, context=ctx, timeout=5) as resp:
                return bool(resp.status == 200)
        except (urllib.error.HTTPError, OSError):
            return False

    def alive(self) -> bool:
        return self.proc.poll() is None

    def lost_a_port(self) -> bool:
        """Whether the (exited) binary found a port of its taken: its log says so, or one is
        still bound by another process. The log alone is not enough: when the webhook server
        cannot listen, the manager stops, and upstream's main may exit on the setup error that
        follows ("can't accept new runnable as stop procedure is already engaged") before the
        listen error is logged."""
        picked = (self.webhook_port, self.health_port, self.metrics_port)
        return ADDRESS_IN_USE in self.log() or not all(map(ports.port_is_free, picked))

    def stop(self, timeout: float = 20) -> int | None:
        for obj in self.registered:
            res = (
                r.MUTATING_WEBHOOK_CONFIGURATIONS
                if obj["kind"] == "MutatingWebhookConfiguration"
                else r.VALIDATING_WEBHOOK_CONFIGURATIONS
            )
            try:
                self.kube.delete(res, obj["metadata"]["name"], ignore_not_found=True)
            except Exception as e:  # the control plane may be gone already
                print(f"upstream controller: deleting {obj['metadata']['name']}: {e}")
        self.registered.clear()
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        shutil.rmtree(self.workdir / "tmp", ignore_errors=True)
        return self.proc.returncode


# A port picked here can be taken by another process before the Go binary binds it (it cannot
# report a port 0 back: the webhook configuration must name the port first); controller-runtime
# then exits with "listen tcp 127.0.0.1:N: bind: address already in use", and the harness starts
# it again on other ports.
ADDRESS_IN_USE = "address already in use"
PORT_ATTEMPTS = 4


def _launch(
    b: Build, kube: Client, workdir: Path, env: dict[str, str], extra: list[str], attempt: int
) -> Upstream:
    """Start the binary once, on fresh ports (its log: ``controller.log``, a try's own after
    the first)."""
    webhook_port, health_port, metrics_port = free_ports(3)
    ports = {"webhook_port": webhook_port, "health_port": health_port, "metrics_port": metrics_port}
    cfg_path = workdir / "config.yaml"
    cfg_path.write_text(yaml.safe_dump(configuration(b, **ports)))
    log_path = workdir / ("controller.log" if attempt == 1 else f"controller-{attempt}.log")
    proc = subprocess.Popen(
        [str(b.binary), "--config", str(cfg_path), "--zap-log-level", "info", *extra],
        stdout=open(log_path, "wb"),  # noqa: SIM115 - the child owns it
        stderr=subprocess.STDOUT,
        env=env,
        cwd=workdir,
    )
    return Upstream(proc, kube, workdir, log_path, webhook_port, health_port, metrics_port)


def start(
    b: Build,
    kubeconfig: Path,
    kube: Client,
    *,
    webhooks: bool = True,
    ready_timeout: float = 90,
    extra_args: list[str] | None = None,
) -> Upstream:
    """Start upstream's controller against ``kubeconfig``; wait until its webhooks answer."""
    workdir = Path(tempfile.mkdtemp(prefix="trainjob-upstream-"))
    certdir = workdir / "tmp" / "k8s-webhook-server" / "serving-certs"
    certdir.mkdir(parents=True)
    bundle = certs.generate(["localhost"], ["127.0.0.1"], ca_name="trainjob-tests-upstream-ca")
    (certdir / "tls.crt").write_bytes(bundle.cert)
    (certdir / "tls.key").write_bytes(bundle.key)
    (workdir / "ca.crt").write_bytes(bundle.ca_cert)
    env = {
        **{k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "TMPDIR")},
        "KUBECONFIG": str(kubeconfig),
        "TMPDIR": str(workdir / "tmp"),
    }
    for attempt in range(1, PORT_ATTEMPTS + 1):
        up = _launch(b, kube, workdir, env, extra_args or [], attempt)
        try:
            deadline = time.monotonic() + ready_timeout
            while not (up.ready() and up.webhooks_serving()):
                if not up.alive() or time.monotonic() > deadline:
                    raise RuntimeError(
                        f"upstream controller not ready (exit {up.proc.poll()}); "
                        f"log:\n{up.log()[-4000:]}"
                    )
                time.sleep(0.2)
            break
        except RuntimeError:
            if up.alive() or not up.lost_a_port() or attempt == PORT_ATTEMPTS:
                up.stop()
                raise
            up.proc.wait(5)  # exited: reaped; its certificates (under workdir/tmp) serve the next
            print(f"upstream controller lost a port (attempt {attempt}); trying other ports")
        except BaseException:
            up.stop()
            raise
    try:
        if webhooks:
            for obj in webhook_configurations(
                b, f"https://127.0.0.1:{up.webhook_port}", bundle.ca_cert
            ):
                kube.apply(obj, field_manager="trainjob-tests")
                up.registered.append(obj)
    except BaseException:
        up.stop()
        raise
    return up


def swap_crds(kube: Client, files: list[Path]) -> None:
    """Replace the installed trainer CRDs with those of ``files`` (PUT, so nothing of the old
    ones stays), then give the apiserver a moment to serve the new schemas."""
    for f in files:
        for doc in yaml.safe_load_all(f.read_text()):
            if not doc:
                continue
            current = kube.get(r.CUSTOM_RESOURCE_DEFINITIONS, doc["metadata"]["name"])
            doc["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
            kube.replace(r.CUSTOM_RESOURCE_DEFINITIONS, doc)
    time.sleep(3)  # the apiserver swaps the served schema asynchronously


def webhooks_effective(kube: Client, namespace: str = "default") -> bool:
    """A dry-run TrainJob for a missing runtime is denied by a webhook, so the apiserver calls
    the webhooks just registered (registration reaches it a moment later)."""
    probe = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": "webhook-probe", "namespace": namespace},
        "spec": {"runtimeRef": {"name": "webhook-probe-missing", "kind": "TrainingRuntime"}},
    }
    try:
        kube.create(r.TRAINJOBS, probe, namespace, dry_run=True)
    except Forbidden as e:
        return "denied the request" in e.message
    except ApiError:
        return False
    return False
