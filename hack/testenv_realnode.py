"""`hack/testenv up --cluster --real-node`: one node whose pods really run, beside the KWOK nodes.

KWOK's pods never execute. This node's do: a real kubelet (k8s.io/kubernetes cmd/kubelet, built
like the control plane) over containerd's CRI (Debian's containerd 1.6 and runc, cgroupfs), with

  network   a bridge made here (``tj-<hash>``, 10.245.N.1/24, N from the state dir) and the CNI
            plugins bridge, host-local and loopback; no IP masquerade and no default route in the
            pods, so pod traffic stays on that bridge (pod to pod, pod to this machine's bridge
            address) and never leaves the machine. The node's InternalIP is the bridge address
            (the kubelet refuses a loopback node IP); the kubelet serves there, with a certificate
            of the testenv CA, and kube-apiserver reaches it with the admin client certificate
            (logs, exec).
  DNS       CoreDNS (github.com/coredns/coredns, built from the module proxy) on the bridge
            address, port 53, serving cluster.local from the apiserver (headless services give
            their pods' addresses) and NXDOMAIN for every other name (nothing is forwarded).
  sandbox   ``localhost/trainjob/pause:dev``, made with podman from trainjob's base image
            (``sleep infinity``; no registry is reachable here).
  images    imported from podman into containerd (``podman save | ctr images import``), each
            only when podman's image ID changed since it was last imported.

containerd's root (images, snapshots) is kept under ``$TRAINJOB_CACHE/real-node/containerd`` so
images are imported once, not at each ``up``; its state (sockets, network namespaces) is in the
testenv state dir. So one real node runs at a time on a machine (``up`` says which state dir has it).

What this sandbox needs (found here; each is a setting below): containerd's
``restrict_oom_score_adj`` (lowering oom_score_adj is refused: ``write /proc/self/oom_score_adj:
permission denied``, which made runc fail with "can't get final child's PID from pipe: EOF"), an
OCI base spec without rlimits (raising RLIMIT_NOFILE is refused), the kubelet's
``failCgroupV1: false`` (cgroup v1 here) and ``cgroupsPerQOS: false``.

Loaded by hack/testenv_cluster.py (which passes its ``Cluster``). Standard library only, plus
ip(8), podman and ctr.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

NODE_NAME = "trainjob-node-0"
POOL = "real"
CONTAINERD = "/usr/bin/containerd"
CTR = "/usr/bin/ctr"
RUNC = "/usr/sbin/runc"
CNI_BIN = "/usr/lib/cni"
IMAGE_PREFIX = "localhost/trainjob/"
PAUSE_IMAGE = IMAGE_PREFIX + "pause:dev"
BASE_IMAGE = IMAGE_PREFIX + "base:bookworm"
PAUSE_CONTAINERFILE = Path(__file__).resolve().parent / "real-node" / "pause.Containerfile"
NAMESPACE = "k8s.io"  # containerd's namespace of the CRI


def cache_dir() -> Path:
    return Path(os.environ.get("TRAINJOB_CACHE") or Path.home() / ".cache" / "trainjob") / "real-node"


def subnet_index(state: Path) -> int:
    """10.245.N.0/24 for this state dir (1..250), so two state dirs' bridges differ."""
    return 1 + int(hashlib.sha256(str(state).encode()).hexdigest()[:8], 16) % 250


def bridge_name(state: Path) -> str:
    return "tj-" + hashlib.sha256(str(state).encode()).hexdigest()[:8]


def image_ref(name: str) -> str:
    """``torch-trainer`` -> localhost/trainjob/torch-trainer:dev; ``base:bookworm`` keeps its tag."""
    if "/" in name:
        return name
    return IMAGE_PREFIX + (name if ":" in name else f"{name}:dev")


def missing_tools() -> list[str]:
    need = [CONTAINERD, CTR, RUNC, f"{CNI_BIN}/bridge", f"{CNI_BIN}/host-local", f"{CNI_BIN}/loopback"]
    out = [p for p in need if not Path(p).exists()]
    out += [t for t in ("ip", "podman") if shutil.which(t) is None]
    return out


def run(*argv: str, check: bool = True, input_: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    p = subprocess.run(list(argv), input=input_, capture_output=True, check=False)
    if check and p.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)}: exit {p.returncode}: {p.stderr.decode(errors='replace').strip()}")
    return p


class RealNode:
    def __init__(self, cluster: Any, mod: Any) -> None:
        self.c = cluster
        self.mod = mod  # hack/testenv_cluster.py: Component, http_ok, POOL_LABEL
        self.base = cluster.base
        self.state: Path = cluster.state
        self.dir = self.state / "real-node"
        self.n = subnet_index(self.state)
        self.gateway = f"10.245.{self.n}.1"
        self.subnet = f"10.245.{self.n}.0/24"
        self.bridge = bridge_name(self.state)
        self.root = cache_dir() / "containerd"
        self.sock = self.dir / "containerd.sock"
        if len(str(self.sock)) > 100:
            self.base.die(f"state dir {self.state} is too long for containerd's socket path; use a shorter --state-dir")
        self.kubelet_bin = self.base.component_dir("kubelet") / "kubelet"
        self.coredns_bin = self.base.component_dir("coredns") / "coredns"
        missing = missing_tools()
        if missing:
            self.base.die(
                "--real-node needs " + ", ".join(missing)
                + " (apt-get install containerd containernetworking-plugins iproute2 podman; scripts/setup-real-node.sh)"
            )
        cluster.env["cluster"]["real_node"] = {
            "node": NODE_NAME,
            "pool": POOL,
            "bridge": self.bridge,
            "subnet": self.subnet,
            "dns": self.gateway,
            "containerd_socket": str(self.sock),
            "containerd_root": str(self.root),
            "images": [],
        }

    # ------------------------------------------------------------------ setup

    def claim_root(self) -> None:
        """containerd's root holds a lock: say which state dir runs the real node already."""
        owner = self.root.parent / "owner"
        with contextlib.suppress(OSError, ValueError, KeyError):
            other = Path(owner.read_text().strip())
            env = json.loads((other / "env.json").read_text())
            pid, started = env["pids"]["containerd"], env["starts"].get("containerd")
            if other != self.state and self.base.pid_alive(int(pid), started):
                self.base.die(
                    f"a real node already runs from {other} (its containerd, pid {pid}, holds {self.root}); "
                    f"`hack/testenv down --state-dir {other}` first"
                )
        self.root.mkdir(parents=True, exist_ok=True)
        owner.write_text(f"{self.state}\n")

    def make_bridge(self) -> None:
        run("ip", "link", "del", self.bridge, check=False)  # a stale one of this state dir
        run("ip", "link", "add", self.bridge, "type", "bridge")
        run("ip", "addr", "add", f"{self.gateway}/24", "dev", self.bridge)
        run("ip", "link", "set", self.bridge, "up")

    def write_configs(self) -> None:
        d = self.dir
        (d / "cni").mkdir(parents=True, exist_ok=True)
        (d / "cni" / "10-trainjob.conflist").write_text(json.dumps({
            "cniVersion": "0.4.0",
            "name": f"trainjob-{self.n}",
            "plugins": [
                {
                    "type": "bridge",
                    "bridge": self.bridge,
                    "isGateway": True,
                    "isDefaultGateway": False,  # no default route: pod traffic stays on the bridge
                    "ipMasq": False,
                    "hairpinMode": True,
                    "ipam": {
                        "type": "host-local",
                        "dataDir": str(d / "cni-ipam"),
                        "ranges": [[{"subnet": self.subnet, "gateway": self.gateway}]],
                    },
                },
                {"type": "loopback"},
            ],
        }, indent=1))
        spec = json.loads(run(CTR, "oci", "spec").stdout)
        spec["process"].pop("rlimits", None)  # raising RLIMIT_NOFILE is refused here
        (d / "base-spec.json").write_text(json.dumps(spec, indent=1))
        q = json.dumps
        (d / "containerd.toml").write_text(f"""version = 2
root = {q(str(self.root))}
state = {q(str(d / "containerd-state"))}
[grpc]
  address = {q(str(self.sock))}
[ttrpc]
  address = {q(str(self.sock) + ".ttrpc")}
[debug]
  address = ""
[metrics]
  address = ""
[plugins."io.containerd.internal.v1.opt"]
  path = {q(str(self.root / "opt"))}
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = {q(PAUSE_IMAGE)}
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  disable_apparmor = true
  enable_selinux = false
  netns_mounts_under_state_dir = true
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      base_runtime_spec = {q(str(d / "base-spec.json"))}
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        BinaryName = {q(RUNC)}
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = {q(CNI_BIN)}
    conf_dir = {q(str(d / "cni"))}
""")
        (d / "resolv.conf").write_text(f"nameserver {self.gateway}\n")

    def kubelet_pki(self) -> None:
        self.c.serving_cert("kubelet", "ca", f"IP:{self.gateway},IP:127.0.0.1,DNS:localhost,DNS:{NODE_NAME}")

    # ------------------------------------------------------------------ images

    def ctr(self, *a: str, input_: bytes | None = None, check: bool = True) -> subprocess.CompletedProcess[bytes]:
        return run(CTR, "--address", str(self.sock), "-n", NAMESPACE, *a, input_=input_, check=check)

    def podman_id(self, ref: str) -> str | None:
        p = run("podman", "image", "inspect", "--format", "{{.Id}}", ref, check=False)
        return p.stdout.decode().strip() or None if p.returncode == 0 else None

    def ensure_pause(self) -> None:
        if self.podman_id(PAUSE_IMAGE):
            return
        if not self.podman_id(BASE_IMAGE):
            self.base.die(f"{BASE_IMAGE} is not in podman; run hack/build-images.sh")
        self.c.log(f"building {PAUSE_IMAGE} (podman) ...")
        run("podman", "build", "--isolation", "chroot", "-q", "-t", PAUSE_IMAGE,
            "-f", str(PAUSE_CONTAINERFILE), str(PAUSE_CONTAINERFILE.parent))

    def import_images(self, names: list[str]) -> None:
        marks = cache_dir() / "imported"
        marks.mkdir(parents=True, exist_ok=True)
        have = set(self.ctr("images", "ls", "-q").stdout.decode().split())
        for name in names:
            ref = image_ref(name)
            pid = self.podman_id(ref)
            if not pid:
                self.base.die(f"image {ref} is not in podman; run hack/build-images.sh {name.split(':')[0]}")
            mark = marks / hashlib.sha256(ref.encode()).hexdigest()[:16]
            if ref in have and mark.is_file() and mark.read_text().strip() == pid:
                continue
            ts = time.monotonic()
            saved = subprocess.Popen(["podman", "save", ref], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            imp = subprocess.run(
                [CTR, "--address", str(self.sock), "-n", NAMESPACE, "images", "import", "-"],
                stdin=saved.stdout, capture_output=True, check=False,
            )
            assert saved.stdout is not None
            saved.stdout.close()
            saved.wait()
            if saved.returncode != 0 or imp.returncode != 0:
                err = (saved.stderr.read() if saved.stderr else b"") + imp.stderr
                self.base.die(f"importing {ref} into containerd failed: {err.decode(errors='replace').strip()}")
            mark.write_text(pid + "\n")
            self.c.log(f"  imported {ref} into containerd in {time.monotonic() - ts:.1f}s")
        self.c.env["cluster"]["real_node"]["images"] = [image_ref(n) for n in names]

    # ------------------------------------------------------------------ components

    def containerd(self) -> Any:
        return self.mod.Component(
            "containerd",
            lambda: [CONTAINERD, "--config", str(self.dir / "containerd.toml")],
            lambda: str(self.sock),
            lambda: self.sock.exists() and self.ctr("version", check=False).returncode == 0,
        )

    def coredns(self) -> Any:
        def argv() -> list[str]:
            health = self.c.port("coredns", "health")
            ready = self.c.port("coredns", "ready")
            corefile = self.dir / "Corefile"
            corefile.write_text(f"""cluster.local:53 in-addr.arpa:53 ip6.arpa:53 {{
    bind {self.gateway}
    errors
    health 127.0.0.1:{health}
    ready 127.0.0.1:{ready}
    kubernetes cluster.local in-addr.arpa ip6.arpa {{
        kubeconfig {self.c.kubeconfig} trainjob-testenv
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
    }}
    cache 5
}}
.:53 {{
    bind {self.gateway}
    errors
    template ANY ANY {{
        rcode NXDOMAIN
    }}
}}
""")
            return [str(self.coredns_bin), "-conf", str(corefile)]

        return self.mod.Component(
            "coredns",
            argv,
            lambda: f"{self.gateway}:53",
            lambda: self.mod.http_ok(f"http://127.0.0.1:{self.c.ports['coredns']['ready']}/ready"),
        )

    def kubelet(self) -> Any:
        pki = self.c.pki

        def argv() -> list[str]:
            port = self.c.port("kubelet", "server")
            healthz = self.c.port("kubelet", "healthz")
            config = self.dir / "kubelet.yaml"
            sock = f"unix://{self.sock}"
            config.write_text(json.dumps({
                "apiVersion": "kubelet.config.k8s.io/v1beta1",
                "kind": "KubeletConfiguration",
                "address": self.gateway,
                "port": port,
                "readOnlyPort": 0,
                "healthzBindAddress": "127.0.0.1",
                "healthzPort": healthz,
                "authentication": {
                    "anonymous": {"enabled": False},
                    "webhook": {"enabled": True},
                    "x509": {"clientCAFile": str(pki / "ca.crt")},
                },
                "authorization": {"mode": "Webhook"},
                "tlsCertFile": str(pki / "kubelet.crt"),
                "tlsPrivateKeyFile": str(pki / "kubelet.key"),
                "cgroupDriver": "cgroupfs",
                "cgroupsPerQOS": False,  # no kubepods cgroup tree: the sandbox's cgroups are v1 and nested
                "enforceNodeAllocatable": [],
                "failSwapOn": False,
                "failCgroupV1": False,
                "containerRuntimeEndpoint": sock,
                "imageServiceEndpoint": sock,
                "clusterDomain": "cluster.local",
                "clusterDNS": [self.gateway],
                "resolvConf": str(self.dir / "resolv.conf"),
                "podLogsDir": str(self.dir / "pod-logs"),  # not /var/log/pods: this state dir's
                # a shared test machine's disk and memory are not this node's to guard
                "evictionHard": {"memory.available": "1Mi", "nodefs.available": "1%",
                                 "imagefs.available": "1%", "nodefs.inodesFree": "1%"},
                "imageGCHighThresholdPercent": 100,
                "imageGCLowThresholdPercent": 99,
                "maxPods": 30,
                "serializeImagePulls": False,
                "registerNode": True,
                "nodeStatusReportFrequency": "10s",
            }, indent=1))
            return [
                str(self.kubelet_bin),
                f"--config={config}",
                f"--kubeconfig={self.c.kubeconfig}",
                f"--root-dir={self.dir / 'kubelet'}",
                f"--cert-dir={self.dir / 'kubelet-pki'}",
                f"--hostname-override={NODE_NAME}",
                f"--node-ip={self.gateway}",
                f"--node-labels={self.mod.POOL_LABEL}={POOL}",
                "--v=1",
            ]

        return self.mod.Component(
            "kubelet",
            argv,
            lambda: f"{self.gateway}:{self.c.ports['kubelet']['server']}",
            lambda: self.c.nodes_ready([NODE_NAME]),
        )

    def up(self) -> None:
        t0 = time.monotonic()
        self.claim_root()
        self.make_bridge()
        self.write_configs()
        self.kubelet_pki()
        self.ensure_pause()
        comps = [self.containerd()]
        self.c.start(comps[0])
        self.c.wait(comps[0])
        self.import_images(["pause:dev", "base:bookworm", *self.c.args.real_node_images])
        comps += [self.coredns(), self.kubelet()]
        for comp in comps[1:]:
            self.c.start(comp)
        for comp in comps[1:]:
            self.c.wait(comp)
        self.c.save()
        self.c.log(f"real node {NODE_NAME} ready in {time.monotonic() - t0:.1f}s (pods on {self.subnet}, DNS {self.gateway})")


# ---------------------------------------------------------------------- teardown (hack/testenv down)


def before_stop(base: Any, state: Path, env: dict[str, Any]) -> None:
    """Stop the kubelet, then every container of the node (their shims outlive containerd)."""
    rn = (env.get("cluster") or {}).get("real_node")
    if not rn:
        return
    pid, started = (env.get("pids") or {}).get("kubelet"), (env.get("starts") or {}).get("kubelet")
    if pid:
        base.stop(int(pid), started, "kubelet")
    sock = rn["containerd_socket"]
    cpid, cstarted = (env.get("pids") or {}).get("containerd"), (env.get("starts") or {}).get("containerd")
    if not (cpid and base.pid_alive(int(cpid), cstarted)):
        return
    ctr = [CTR, "--address", sock, "-n", NAMESPACE]
    tasks = run(*ctr, "tasks", "ls", "-q", check=False).stdout.decode().split()
    for t in tasks:
        run(*ctr, "tasks", "kill", "-s", "SIGKILL", t, check=False)
    deadline = time.monotonic() + 20
    for t in tasks:
        while run(*ctr, "tasks", "delete", t, check=False).returncode != 0 and time.monotonic() < deadline:
            time.sleep(0.2)
    for c in run(*ctr, "containers", "ls", "-q", check=False).stdout.decode().split():
        run(*ctr, "containers", "rm", c, check=False)


def after_stop(base: Any, state: Path, env: dict[str, Any]) -> None:
    """Unmount what the node mounted under the state dir (volumes, network namespaces, rootfs),
    remove the bridge."""
    rn = (env.get("cluster") or {}).get("real_node")
    if not rn:
        return
    prefix = str(state) + "/"
    with open("/proc/self/mounts") as f:
        mounts = [line.split()[1].encode().decode("unicode_escape") for line in f]
    for m in sorted((m for m in mounts if m.startswith(prefix)), key=len, reverse=True):
        run("umount", "-l", m, check=False)
    run("ip", "link", "del", rn["bridge"], check=False)
    owner = Path(rn["containerd_root"]).parent / "owner"
    with contextlib.suppress(OSError):
        if owner.read_text().strip() == str(state):
            owner.unlink()
