"""`hack/testenv up --cluster`: the rest of a cluster around the test control plane.

Besides etcd and kube-apiserver (hack/testenv), this starts, all on loopback and all built from the
Go module proxy by hack/build-control-plane.sh:

  kube-controller-manager   every default controller (Job, garbage collector, namespace, volumes,
                            ServiceAccount and its token, ...), no leader election
  kube-scheduler            the default scheduler
  kwok                      fake nodes (--nodes CPU nodes, --gpu-nodes GPU nodes with nvidia.com/gpu)
                            whose pods go Running, then Succeeded or Failed (hack/kwok/pod-stages.yaml:
                            the pod annotation trainjob-testenv/outcome chooses)
  jobset                    the real JobSet controller, its webhooks served on loopback
  kueue (--kueue)           Kueue with only its TrainJob integration; its TrainJob webhooks act in
                            namespaces labelled trainjob-testenv/kueue=true (so Kueue's runtimePatch
                            shows up only where a test asks for Kueue)
  real node (--real-node)   containerd, CoreDNS and a real kubelet: one node whose pods run
                            (hack/testenv_realnode.py)
  scheduler-plugins (--coscheduling)
                            a second scheduler, `scheduler-plugins-scheduler`, with the Coscheduling
                            plugin (gang scheduling of pods labelled scheduling.x-k8s.io/pod-group)

Webhook configurations are installed from the controllers' own manifests (their module zips), with
`clientConfig.url` on 127.0.0.1 and a caBundle, the way envtest installs webhooks.

Loaded by hack/testenv (which passes itself as ``base``: processes, ports, the REST client and
logging live there). Python 3 standard library only, plus openssl.
"""

from __future__ import annotations

import base64
import json
import shutil
import ssl
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

REPO = Path(__file__).resolve().parent.parent
POD_STAGES = REPO / "hack" / "kwok" / "pod-stages.yaml"
KWOK_NODE_ANNOTATION = "kwok.x-k8s.io/node"
POOL_LABEL = "trainjob-testenv/pool"
KUEUE_NAMESPACE_LABEL = "trainjob-testenv/kueue"
KUEUE_NAMESPACE = "kueue-system"
KUEUE_SERVICE = "kueue-webhook-service"
KUEUE_SECRET = "kueue-webhook-server-cert"
SCHEDULER_PLUGINS_NAME = "scheduler-plugins-scheduler"
POD_CIDR = "10.244.0.0/16"

# Each component: the build-control-plane.sh component it needs, and its binary there.
BINARIES = {
    "kube-controller-manager": ("kube-controller-manager", "kube-controller-manager"),
    "kube-scheduler": ("kube-scheduler", "kube-scheduler"),
    "kwok": ("kwok", "kwok"),
    "jobset": ("jobset", "jobset"),
    "kueue": ("kueue", "kueue"),
    "scheduler-plugins": ("scheduler-plugins", "kube-scheduler"),
}


REAL_NODE = ["containerd", "coredns", "kubelet"]


def components(kueue: bool, coscheduling: bool, real_node: bool = False) -> list[str]:
    """The processes of the cluster (beyond etcd and kube-apiserver), in start order."""
    out = ["kube-controller-manager", "kube-scheduler", "kwok", "jobset"]
    if kueue:
        out.append("kueue")
    if coscheduling:
        out.append("scheduler-plugins")
    if real_node:
        out += REAL_NODE
    return out


def build_components(kueue: bool, coscheduling: bool, real_node: bool = False) -> list[str]:
    """What hack/build-control-plane.sh must build for them (containerd is Debian's)."""
    built = [BINARIES[c][0] for c in components(kueue, coscheduling) if c in BINARIES]
    return built + (["coredns", "kubelet"] if real_node else [])


def realnode_module() -> ModuleType:
    """hack/testenv_realnode.py (loaded only for --real-node, and by `down` of such a cluster)."""
    import importlib.util
    import sys

    if "testenv_realnode" in sys.modules:
        return sys.modules["testenv_realnode"]
    spec = importlib.util.spec_from_file_location(
        "testenv_realnode", REPO / "hack" / "testenv_realnode.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["testenv_realnode"] = module
    spec.loader.exec_module(module)
    return module


@dataclass
class Component:
    """A cluster process: how to start it (``argv`` picks its ports) and when it is ready."""

    name: str
    argv: Callable[[], list[str]]
    where: Callable[[], str]
    ready: Callable[[], bool]
    env: dict[str, str] | None = None


def _insecure() -> ssl.SSLContext:
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    return ctx


def http_ok(url: str) -> bool:
    """GET ``url`` (TLS not verified: the components serve health with self-signed certs)."""
    try:
        with urllib.request.urlopen(url, context=_insecure(), timeout=3) as r:
            return bool(r.status == 200)
    except (OSError, urllib.error.URLError, ValueError):
        return False


def b64(path: Path) -> str:
    return base64.b64encode(path.read_bytes()).decode()


class Cluster:
    def __init__(self, base: ModuleType, state: Path, env: dict[str, Any], args: Any) -> None:
        self.base = base
        self.state = state
        self.env = env
        self.args = args
        self.pki = state / "pki"
        self.kubeconfig = state / "kubeconfig"
        self.api = base.Api(env["server"], env["token"], env["ca_file"])
        self.real_node = bool(getattr(args, "real_node", False))
        self.names = components(args.kueue, args.coscheduling, self.real_node)
        self.bins = {
            n: base.component_dir(BINARIES[n][0]) / BINARIES[n][1]
            for n in self.names
            if n in BINARIES
        }
        for n in ("coredns", "kubelet") if self.real_node else ():
            self.bins[n] = base.component_dir(n) / n
        for n, path in self.bins.items():
            if not path.is_file():
                base.die(
                    f"{n} binary not found at {path}; run hack/build-control-plane.sh cluster "
                    "(or drop --no-build)"
                )
        self.ports: dict[str, dict[str, int]] = {}
        # each component's log offset at its latest start, and how often it was started
        self.offsets: dict[str, int] = {}
        self.attempts: dict[str, int] = {}
        env["cluster"] = {
            "components": self.names,
            "nodes": [],
            "scheduler_plugins": SCHEDULER_PLUGINS_NAME if args.coscheduling else None,
            "kueue_namespace_label": KUEUE_NAMESPACE_LABEL if args.kueue else None,
        }

    # ------------------------------------------------------------------ helpers

    def log(self, msg: str) -> None:
        self.base.log(msg)

    def save(self) -> None:
        (self.state / "env.json").write_text(json.dumps(self.env, indent=2))

    def port(self, comp: str, what: str) -> int:
        taken = {p for ports in self.ports.values() for p in ports.values()}
        p = int(self.base.free_port(taken))
        self.ports.setdefault(comp, {})[what] = p
        self.env.setdefault("ports", {})[f"{comp}/{what}"] = p
        return p

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        ok: tuple[int, ...] = (200, 201),
        content_type: str = "application/json",
    ) -> Any:
        status, out = self.api.request(method, path, body, content_type=content_type)
        if status not in ok:
            msg = out.get("message") if isinstance(out, dict) else out
            self.base.die(f"{method} {path} failed ({status}): {msg}")
        return out

    def apply(self, path: str, obj: dict[str, Any]) -> Any:
        q = urllib.parse.urlencode({"fieldManager": self.base.FIELD_MANAGER, "force": "true"})
        return self.request(
            "PATCH", f"{path}?{q}", json.dumps(obj), content_type="application/apply-patch+yaml"
        )

    def openssl(self, *a: str) -> None:
        self.base.openssl(*a, cwd=self.pki)

    def serving_cert(self, name: str, ca: str, sans: str) -> None:
        """A serving cert ``name``.crt/.key for ``sans``, signed by the CA ``ca``.crt/.key."""
        ext = self.pki / f"{name}.ext"
        ext.write_text(
            "authorityKeyIdentifier=keyid,issuer\nsubjectKeyIdentifier=hash\nbasicConstraints=critical,CA:FALSE\n"
            "keyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n"
            f"subjectAltName={sans}\n"
        )
        self.openssl(
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            f"{name}.key",
            "-out",
            f"{name}.csr",
            "-subj",
            f"/CN={name}",
        )
        self.openssl(
            "x509",
            "-req",
            "-in",
            f"{name}.csr",
            "-CA",
            f"{ca}.crt",
            "-CAkey",
            f"{ca}.key",
            "-CAcreateserial",
            "-out",
            f"{name}.crt",
            "-days",
            "3650",
            "-extfile",
            ext.name,
        )
        (self.pki / f"{name}.key").chmod(0o600)

    def cert_dir(self, name: str, cert: str) -> Path:
        d = self.state / name / "certs"
        d.mkdir(parents=True, exist_ok=True)
        shutil.copy(self.pki / f"{cert}.crt", d / "tls.crt")
        shutil.copy(self.pki / f"{cert}.key", d / "tls.key")
        return d

    def webhooks_from(
        self,
        manifests: Path,
        prefix: str,
        port: int,
        ca: Path,
        keep: Callable[[dict[str, Any]], bool] = lambda wh: True,
        adjust: Callable[[dict[str, Any]], None] = lambda wh: None,
    ) -> None:
        """Install the webhook configurations of ``manifests`` (controller-gen output, service
        clientConfig) renamed ``<prefix>-...`` with url clientConfig on 127.0.0.1:``port``."""
        for kind_path in (
            "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations",
            "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations",
        ):
            kind = (
                "MutatingWebhookConfiguration"
                if "mutating" in kind_path
                else "ValidatingWebhookConfiguration"
            )
            docs = [d for d in self._docs_of_kind(manifests, kind)]
            for doc in docs:
                obj = self.as_json(doc, kind_path)
                obj["metadata"] = {"name": f"{prefix}-{obj['metadata']['name']}"}
                hooks = []
                for wh in obj.get("webhooks") or []:
                    if not keep(wh):
                        continue
                    path = (wh.get("clientConfig", {}).get("service") or {}).get("path", "/")
                    wh["clientConfig"] = {
                        "url": f"https://127.0.0.1:{port}{path}",
                        "caBundle": b64(ca),
                    }
                    adjust(wh)
                    hooks.append(wh)
                obj["webhooks"] = hooks
                self.apply(f"{kind_path}/{obj['metadata']['name']}", obj)
                self.log(
                    f"  applied {kind} {obj['metadata']['name']} ({len(hooks)} webhooks on 127.0.0.1:{port})"
                )

    def _docs_of_kind(self, path: Path, kind: str) -> list[str]:
        return [
            doc for doc, head in self.base.yaml_documents(path.read_text()) if head["kind"] == kind
        ]

    def as_json(self, doc: str, kind_path: str) -> dict[str, Any]:
        """A YAML document as a JSON object, read by the apiserver (a server-side dry run of it
        under the collection ``kind_path``): this script has no YAML parser of its own."""
        head = self.base.yaml_documents(doc)[0][1]
        q = urllib.parse.urlencode({"fieldManager": self.base.FIELD_MANAGER, "dryRun": "All"})
        obj: dict[str, Any] = self.request(
            "PATCH",
            f"{kind_path}/{head['name']}?{q}",
            doc,
            content_type="application/apply-patch+yaml",
        )
        for k in ("uid", "resourceVersion", "creationTimestamp", "generation", "managedFields"):
            obj.get("metadata", {}).pop(k, None)
        return obj

    def component_flags(self, comp: str, health_port_name: str = "secure") -> list[str]:
        """Serving flags shared by kube-controller-manager and kube-scheduler."""
        port = self.port(comp, health_port_name)
        certs = self.state / comp / "serving"
        certs.mkdir(parents=True, exist_ok=True)
        return [
            f"--kubeconfig={self.kubeconfig}",
            f"--authentication-kubeconfig={self.kubeconfig}",
            f"--authorization-kubeconfig={self.kubeconfig}",
            "--bind-address=127.0.0.1",
            f"--secure-port={port}",
            f"--cert-dir={certs}",
            "--leader-elect=false",
            "--v=1",
        ]

    # ------------------------------------------------------------------ components

    def kube_controller_manager(self) -> Component:
        def argv() -> list[str]:
            return [
                str(self.bins["kube-controller-manager"]),
                *self.component_flags("kube-controller-manager"),
                "--controllers=*",
                f"--service-account-private-key-file={self.pki / 'sa.key'}",
                f"--root-ca-file={self.pki / 'ca.crt'}",
                "--use-service-account-credentials=false",
                f"--cluster-signing-cert-file={self.pki / 'ca.crt'}",
                f"--cluster-signing-key-file={self.pki / 'ca.key'}",
                # fake nodes come and go in tests: evict their pods soon after they go away
                "--node-monitor-grace-period=20s",
                # PersistentVolumeClaims get volumes (the default StorageClass below): a hostPath
                # path under /tmp/hostpath_pv is only named, never made (KWOK mounts nothing)
                "--enable-hostpath-provisioner=true",
            ]

        return Component(
            "kube-controller-manager",
            argv,
            lambda: f"127.0.0.1:{self.ports['kube-controller-manager']['secure']}",
            lambda: http_ok(
                f"https://127.0.0.1:{self.ports['kube-controller-manager']['secure']}/healthz"
            ),
        )

    def kube_scheduler(self) -> Component:
        def argv() -> list[str]:
            return [str(self.bins["kube-scheduler"]), *self.component_flags("kube-scheduler")]

        return Component(
            "kube-scheduler",
            argv,
            lambda: f"127.0.0.1:{self.ports['kube-scheduler']['secure']}",
            lambda: http_ok(f"https://127.0.0.1:{self.ports['kube-scheduler']['secure']}/healthz"),
        )

    def scheduler_plugins(self) -> Component:
        def argv() -> list[str]:
            config = self.state / "scheduler-plugins" / "config.yaml"
            config.parent.mkdir(parents=True, exist_ok=True)
            # As scheduler-plugins' manifests/coscheduling/scheduler-config.yaml, as a second
            # scheduler (its Helm chart's name for it).
            config.write_text(f"""apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: false
clientConnection:
  kubeconfig: {json.dumps(str(self.kubeconfig))}
profiles:
- schedulerName: {SCHEDULER_PLUGINS_NAME}
  plugins:
    multiPoint:
      enabled:
      - name: Coscheduling
    queueSort:
      enabled:
      - name: Coscheduling
      disabled:
      - name: "*"
  pluginConfig:
  - name: Coscheduling
    args:
      permitWaitingTimeSeconds: 10
""")
            flags = [
                f
                for f in self.component_flags("scheduler-plugins")
                if not f.startswith(("--kubeconfig", "--leader-elect"))
            ]
            # Coscheduling requeues a gang it turned away only on pod and PodGroup events, not when
            # a node joins; the 5 min default flush of unschedulable pods would make a test wait
            return [
                str(self.bins["scheduler-plugins"]),
                f"--config={config}",
                *flags,
                "--pod-max-in-unschedulable-pods-duration=10s",
            ]

        return Component(
            "scheduler-plugins",
            argv,
            lambda: f"127.0.0.1:{self.ports['scheduler-plugins']['secure']}",
            lambda: http_ok(
                f"https://127.0.0.1:{self.ports['scheduler-plugins']['secure']}/healthz"
            ),
        )

    def kwok(self) -> Component:
        stages_dir = self.bins["kwok"].parent / "stages"
        node_stages = sorted(stages_dir.glob("*.yaml"))
        if not node_stages:
            self.base.die(
                f"no KWOK node stages in {stages_dir}; run hack/build-control-plane.sh kwok"
            )

        def argv() -> list[str]:
            port = self.port("kwok", "server")
            home = self.state / "kwok"
            home.mkdir(parents=True, exist_ok=True)
            configs = [f"--config={p}" for p in [*node_stages, POD_STAGES]]
            return [
                str(self.bins["kwok"]),
                *configs,
                f"--kubeconfig={self.kubeconfig}",
                f"--manage-nodes-with-annotation-selector={KWOK_NODE_ANNOTATION}=fake",
                f"--cidr={POD_CIDR}",
                "--node-ip=127.0.0.1",
                "--node-lease-duration-seconds=40",
                f"--server-address=127.0.0.1:{port}",
            ]

        return Component(
            "kwok",
            argv,
            lambda: f"127.0.0.1:{self.ports['kwok']['server']}",
            lambda: http_ok(f"http://127.0.0.1:{self.ports['kwok']['server']}/healthz"),
            # no ~/.kwok/kwok.yaml of the user's
            env={"HOME": str(self.state / "kwok")},
        )

    def jobset(self) -> Component:
        manifests = self.bins["jobset"].parent / "webhook" / "manifests.yaml"
        certs = self.cert_dir("jobset", "webhook")

        def argv() -> list[str]:
            webhook, health = self.port("jobset", "webhook"), self.port("jobset", "health")
            config = self.state / "jobset" / "config.yaml"
            config.write_text(f"""apiVersion: config.jobset.x-k8s.io/v1alpha1
kind: Configuration
leaderElection:
  leaderElect: false
internalCertManagement:
  enable: false
webhook:
  host: 127.0.0.1
  port: {webhook}
  certDir: {json.dumps(str(certs))}
metrics:
  bindAddress: "0"
health:
  healthProbeBindAddress: 127.0.0.1:{health}
""")

            def pods_of_jobsets(wh: dict[str, Any]) -> None:
                # JobSet's config/components/webhook/patches: its pod webhooks only see JobSet pods
                if any("pods" in (r.get("resources") or []) for r in wh.get("rules") or []):
                    wh["objectSelector"] = {
                        "matchExpressions": [
                            {"key": "jobset.sigs.k8s.io/jobset-name", "operator": "Exists"}
                        ]
                    }

            self.webhooks_from(
                manifests, "jobset", webhook, self.pki / "ca.crt", adjust=pods_of_jobsets
            )
            return [
                str(self.bins["jobset"]),
                f"--config={config}",
                f"--kubeconfig={self.kubeconfig}",
                "--zap-log-level=info",
            ]

        return Component(
            "jobset",
            argv,
            lambda: f"127.0.0.1:{self.ports['jobset']['webhook']}",
            lambda: http_ok(f"http://127.0.0.1:{self.ports['jobset']['health']}/readyz"),
        )

    def kueue(self) -> Component:
        out = self.bins["kueue"].parent
        # Kueue's own cert rotator (its metrics server reads /etc/kueue/metrics/certs otherwise)
        # manages the webhook certs from a Secret. Made here, valid for its service name *and*
        # 127.0.0.1, so the rotator keeps it: its CA must be valid for the name "kueue-ca".
        self.openssl(
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            "kueue-ca.key",
            "-out",
            "kueue-ca.crt",
            "-days",
            "3650",
            "-subj",
            "/O=kueue/CN=kueue-ca",
            "-addext",
            "basicConstraints=critical,CA:TRUE",
            "-addext",
            "keyUsage=critical,keyCertSign,cRLSign,digitalSignature",
            "-addext",
            "subjectAltName=DNS:kueue-ca",
        )
        # the rotator parses the CA key as PKCS #1 only ("RSA PRIVATE KEY"; openssl 3 writes PKCS #8)
        self.openssl("rsa", "-in", "kueue-ca.key", "-traditional", "-out", "kueue-ca.key")
        self.serving_cert(
            "kueue-webhook",
            "kueue-ca",
            f"DNS:{KUEUE_SERVICE}.{KUEUE_NAMESPACE}.svc,IP:127.0.0.1,DNS:localhost",
        )
        # the Secret's files, where a kubelet would mount it (the rotator waits for them there)
        certs = self.cert_dir("kueue", "kueue-webhook")
        shutil.copy(self.pki / "kueue-ca.crt", certs / "ca.crt")
        self.apply(
            f"/api/v1/namespaces/{KUEUE_NAMESPACE}",
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": KUEUE_NAMESPACE}},
        )
        self.apply(
            f"/api/v1/namespaces/{KUEUE_NAMESPACE}/secrets/{KUEUE_SECRET}",
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "type": "Opaque",
                "metadata": {"name": KUEUE_SECRET, "namespace": KUEUE_NAMESPACE},
                "data": {
                    "ca.crt": b64(self.pki / "kueue-ca.crt"),
                    "ca.key": b64(self.pki / "kueue-ca.key"),
                    "tls.crt": b64(self.pki / "kueue-webhook.crt"),
                    "tls.key": b64(self.pki / "kueue-webhook.key"),
                },
            },
        )

        def argv() -> list[str]:
            webhook, health = self.port("kueue", "webhook"), self.port("kueue", "health")
            visibility = self.port("kueue", "visibility")
            ca = self.pki / "kueue-ca.crt"
            # CRDs with their conversion webhook (the rotator injects its CA there too, and waits
            # until it could), as Kueue's config/components/crd/patches do
            crds = []
            for f in sorted((out / "crds").glob("*.yaml")):
                for doc, head in self.base.yaml_documents(f.read_text()):
                    crds_path = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
                    path = f"{crds_path}/{head['name']}"
                    crd = self.as_json(doc, crds_path)
                    if len(crd["spec"].get("versions") or []) > 1:
                        crd["spec"]["conversion"] = {
                            "strategy": "Webhook",
                            "webhook": {
                                "conversionReviewVersions": ["v1"],
                                "clientConfig": {
                                    "url": f"https://127.0.0.1:{webhook}/convert",
                                    "caBundle": b64(ca),
                                },
                            },
                        }
                    self.apply(path, crd)
                    crds.append(head["name"])
            self.base.wait_crds_established(self.api, crds)
            self.log(f"  {len(crds)} Kueue CRDs Established")

            def kueue_or_trainjob(wh: dict[str, Any]) -> bool:
                groups = {g for r in wh.get("rules") or [] for g in r.get("apiGroups") or []}
                return bool(groups & {"kueue.x-k8s.io", "trainer.kubeflow.org"})

            def trainjobs_where_asked(wh: dict[str, Any]) -> None:
                groups = {g for r in wh.get("rules") or [] for g in r.get("apiGroups") or []}
                if "trainer.kubeflow.org" in groups:
                    wh["namespaceSelector"] = {"matchLabels": {KUEUE_NAMESPACE_LABEL: "true"}}

            self.webhooks_from(
                out / "webhook" / "manifests.yaml",
                "kueue",
                webhook,
                ca,
                keep=kueue_or_trainjob,
                adjust=trainjobs_where_asked,
            )
            config = self.state / "kueue" / "config.yaml"
            config.write_text(f"""apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
namespace: {KUEUE_NAMESPACE}
health:
  healthProbeBindAddress: 127.0.0.1:{health}
metrics:
  bindAddress: "0"
webhook:
  host: 127.0.0.1
  port: {webhook}
  certDir: {json.dumps(str(certs))}
leaderElection:
  leaderElect: false
internalCertManagement:
  enable: true
  webhookServiceName: {KUEUE_SERVICE}
  webhookSecretName: {KUEUE_SECRET}
manageJobsWithoutQueueName: false
integrations:
  frameworks:
  - trainer.kubeflow.org/trainjob
""")
            return [
                str(self.bins["kueue"]),
                f"--config={config}",
                f"--kubeconfig={self.kubeconfig}",
                f"--visibility-server-port={visibility}",
                "--feature-gates=VisibilityOnDemand=false",
                "--zap-log-level=info",
            ]

        return Component(
            "kueue",
            argv,
            lambda: f"127.0.0.1:{self.ports['kueue']['webhook']}",
            lambda: http_ok(f"http://127.0.0.1:{self.ports['kueue']['health']}/readyz"),
        )

    # ------------------------------------------------------------------ nodes

    def node(self, name: str, pool: str, cpu: str, memory: str, gpus: int = 0) -> dict[str, Any]:
        resources = {"cpu": cpu, "memory": memory, "pods": "110", "ephemeral-storage": "100Gi"}
        labels = {
            "kubernetes.io/hostname": name,
            "kubernetes.io/os": "linux",
            "kubernetes.io/arch": "amd64",
            "type": "kwok",
            POOL_LABEL: pool,
        }
        if gpus:
            resources["nvidia.com/gpu"] = str(gpus)
            labels["nvidia.com/gpu.present"] = "true"
        return {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": name,
                "labels": labels,
                "annotations": {KWOK_NODE_ANNOTATION: "fake", "node.alpha.kubernetes.io/ttl": "0"},
            },
            "status": {"capacity": resources, "allocatable": resources},
        }

    def create_nodes(self) -> list[str]:
        names = []
        for i in range(self.args.nodes):
            node = self.node(f"kwok-cpu-{i}", "cpu", self.args.node_cpu, self.args.node_memory)
            self.request("POST", "/api/v1/nodes", node, ok=(201, 409))
            names.append(node["metadata"]["name"])
        for i in range(self.args.gpu_nodes):
            node = self.node(
                f"kwok-gpu-{i}",
                "gpu",
                self.args.node_cpu,
                self.args.node_memory,
                gpus=self.args.gpus_per_node,
            )
            self.request("POST", "/api/v1/nodes", node, ok=(201, 409))
            names.append(node["metadata"]["name"])
        self.env["cluster"]["nodes"] = names
        return names

    def storage_class(self) -> None:
        """A default StorageClass, provisioned by kube-controller-manager's hostPath provisioner,
        so the PersistentVolumeClaims of runtimes (the initializers' volume) are bound."""
        self.apply(
            "/apis/storage.k8s.io/v1/storageclasses/standard",
            {
                "apiVersion": "storage.k8s.io/v1",
                "kind": "StorageClass",
                "metadata": {
                    "name": "standard",
                    "annotations": {"storageclass.kubernetes.io/is-default-class": "true"},
                },
                "provisioner": "kubernetes.io/host-path",
                "reclaimPolicy": "Delete",
                "volumeBindingMode": "Immediate",
            },
        )

    def nodes_ready(self, names: list[str]) -> bool:
        for n in names:
            status, node = self.api.request("GET", f"/api/v1/nodes/{n}")
            if status != 200:
                return False
            conds = {
                c["type"]: c["status"] for c in (node.get("status") or {}).get("conditions") or []
            }
            if conds.get("Ready") != "True":
                return False
        return True

    # ------------------------------------------------------------------ up

    def up(self) -> None:
        t0 = time.monotonic()
        self.webhook_pki()
        self.install_crds()
        specs = {
            "kube-controller-manager": self.kube_controller_manager,
            "kube-scheduler": self.kube_scheduler,
            "kwok": self.kwok,
            "jobset": self.jobset,
            "kueue": self.kueue,
            "scheduler-plugins": self.scheduler_plugins,
        }
        comps = [specs[n]() for n in self.names if n not in REAL_NODE]
        # Start them all, then wait for each (they start side by side); one whose port was taken
        # meanwhile, before it was ready or after (while the nodes come up), is started again on
        # new ports.
        for c in comps:
            self.start(c)
        for c in comps:
            self.wait(c)
        self.storage_class()
        nodes = self.create_nodes()
        self.wait_nodes(comps, nodes)
        if self.real_node:
            realnode_module().RealNode(self, sys.modules[__name__]).up()
            nodes.append(realnode_module().NODE_NAME)
        self.save()
        self.log(
            f"cluster ready in {time.monotonic() - t0:.1f}s: {', '.join(self.names)}; "
            f"nodes {', '.join(nodes)}"
        )

    def webhook_pki(self) -> None:
        self.serving_cert("webhook", "ca", "IP:127.0.0.1,DNS:localhost")

    def install_crds(self) -> None:
        if not self.args.coscheduling:
            return
        # PodGroups (scheduling.x-k8s.io), the Coscheduling plugin's: trainjob's CoScheduling
        # runtime plugin creates one per TrainJob that asks for gang scheduling
        files = sorted((self.base.component_dir("scheduler-plugins") / "crds").glob("*.yaml"))
        if files:
            names = self.base.apply_files(self.api, files)
            self.base.wait_crds_established(self.api, names)

    def start(self, c: Component) -> None:
        self.offsets[c.name] = self.base.log_size(self.state, c.name)
        self.attempts[c.name] = self.attempts.get(c.name, 0) + 1
        argv = c.argv()
        self.log(f"starting {c.name} on {c.where()} ...")
        self.env["pids"][c.name], self.env["starts"][c.name] = self.base.start(
            c.name, argv, self.state, env=c.env
        )
        self.env["argv"][c.name] = argv
        self.save()

    def check_running(self, c: Component) -> bool:
        """Whether ``c`` still runs the start it was given last. False when it exited because a
        port it was given was taken meanwhile: then it has been started again, on new ports (as
        hack/testenv's ``launch``; at most PORT_ATTEMPTS starts in all). Any other exit dies
        with its log."""
        try:
            self.base.check_running(self.state, self.env, c.name, self.offsets[c.name])
            return True
        except self.base.PortTaken as e:
            if self.attempts[c.name] >= self.base.PORT_ATTEMPTS:
                self.base.die(
                    f"{c.name} {self.base.exit_status(self.env['pids'][c.name])}: a port was "
                    f"taken ({e}) at each of {self.attempts[c.name]} starts; last lines of "
                    f"{self.state / 'logs' / (c.name + '.log')}:\n"
                    f"{self.base.log_tail(self.state, c.name, offset=self.offsets[c.name])}"
                )
            self.log(f"{c.name}: {e}; trying other ports")
            self.start(c)
            return False

    def wait(self, c: Component) -> None:
        ts = time.monotonic()
        deadline = ts + self.args.timeout
        while not c.ready():
            if not self.check_running(c):
                deadline = time.monotonic() + self.args.timeout
                continue
            if time.monotonic() > deadline:
                self.base.die(
                    f"{c.name} not ready after {self.args.timeout:.0f}s; last lines of "
                    f"{self.state / 'logs' / (c.name + '.log')}:\n"
                    f"{self.base.log_tail(self.state, c.name, offset=self.offsets[c.name])}"
                )
            time.sleep(0.2)
        self.log(f"{c.name} ready in {time.monotonic() - ts:.1f}s")

    def wait_nodes(self, comps: list[Component], nodes: list[str]) -> None:
        """Wait until the KWOK ``nodes`` are Ready, every component still running: one that
        exited meanwhile because a port it was given was taken (a server it binds after its
        health endpoint answers) is started again on new ports and waited for."""
        deadline = time.monotonic() + self.args.timeout
        while not self.nodes_ready(nodes):
            for c in comps:
                if not self.check_running(c):
                    self.wait(c)
                    deadline = time.monotonic() + self.args.timeout
            if time.monotonic() > deadline:
                self.base.die(
                    f"KWOK nodes not Ready after {self.args.timeout:.0f}s; kwok log:\n"
                    f"{self.base.log_tail(self.state, 'kwok', offset=self.offsets.get('kwok', 0))}"
                )
            time.sleep(0.2)


def up(base: ModuleType, state: Path, env: dict[str, Any], args: Any) -> None:
    Cluster(base, state, env, args).up()
