"""A Plan's pods as local processes: names, labels, env, endpoints, ports, paths and commands.

Pure functions (no processes started, no files written) used by the supervisor for each run of a
JobSet, and by the executor to check before submitting that every command can run here.

* Pods: each replicatedJob has ``replicas`` Jobs of ``parallelism`` pods with completion indexes;
  names, labels and annotations are the ones the JobSet and Job controllers give them.
* Network: a pod's DNS name ``<jobset>-<job>-<jobIndex>-<index>.<subdomain>`` (with any
  ``.<ns>.svc...`` suffix) becomes ``127.0.0.1`` and each declared ``containerPort`` of each pod a
  free local port, so that two jobs, or two pods of one job, never collide. A bare port number as an
  env value (``PET_MASTER_PORT=29500``) is the first pod's that declares it; ``host:port`` is the
  given host's; ``localhost:port`` the pod's own.
* Paths: each volume mount path (``/workspace``) is rewritten, in env values, command, args and
  workingDir, to the volume's directory under the job's home.
* Commands: there are no images here; a container's command runs in this machine's environment
  (``python`` is this interpreter). Upstream's dataset and model initializer images, which have no
  command, run as trainjob's own ``python -m trainjob.initializers.dataset|model``. Any other
  container without a command, or a command not installed, is a :class:`PodConfigError` that says
  what to do.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import math
import os
import re
import shutil
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trainjob import cores, extras
from trainjob.api import corev1, quantity
from trainjob.core import jobset
from trainjob.local import home as homes
from trainjob.local import probes
from trainjob.runtime.plan import Plan

Obj = dict[str, Any]

# What to install for commands a runtime commonly uses.
INSTALL_HINTS = {
    "mpirun": "install OpenMPI: apt-get install -y openmpi-bin libopenmpi-dev "
    "(or run scripts/setup-local.sh)",
    "mpiexec": "install OpenMPI: apt-get install -y openmpi-bin libopenmpi-dev "
    "(or run scripts/setup-local.sh)",
    "torchrun": "install PyTorch: pip install 'trainjob[torch]' (or pip install torch)",
    "tune": "install trainjob's LLM trainer: pip install 'trainjob[llm]' (or torchtune)",
    "deepspeed": "install DeepSpeed: pip install deepspeed",
    "accelerate": "install Accelerate: pip install accelerate",
    "sshd": "install OpenSSH server: apt-get install -y openssh-server",
}
PYTHON_NAMES = re.compile(r"^python(3(\.\d+)?)?$")
# Upstream images whose entrypoint trainjob ships as a module, with the same env contract
# (STORAGE_URI, ACCESS_TOKEN, ...): image without tag -> (module, default OUTPUT_PATH).
BUILTIN_IMAGES = {
    "ghcr.io/kubeflow/trainer/dataset-initializer": (
        "trainjob.initializers.dataset",
        "/workspace/dataset",
    ),
    "ghcr.io/kubeflow/trainer/model-initializer": (
        "trainjob.initializers.model",
        "/workspace/model",
    ),
}
# Commands trainjob stands in for when they are not installed, with the same argv: the torchtune
# runtimes' ``tune run RECIPE --config CONFIG key=value...`` runs trainjob's LLM trainer.
STAND_INS = {"tune": "trainjob.trainers.llm", "trl": "trainjob.trainers.llm.trl"}
# Stand-ins used even when the command is installed: TRL's own ``trl`` CLI hands the run to
# ``accelerate launch``, which ignores PET_* and trains one process a node while reporting
# success; trainjob's takes the same flags and launches torchrun from PET_*.
ALWAYS = frozenset({"trl"})
_SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


class PodConfigError(Exception):
    """A pod cannot run on this machine (no command, command not installed, missing key)."""


@dataclass(frozen=True)
class PodTemplate:
    """One pod of the JobSet before it is mapped onto this machine."""

    job: str
    job_index: int
    index: int
    hostname: str
    name: str
    labels: Mapping[str, str]
    annotations: Mapping[str, str]
    spec: Obj
    depends_on: tuple[tuple[str, str], ...] = ()
    backoff_limit: int = 0


@dataclass(frozen=True)
class LocalContainer:
    name: str
    argv: tuple[str, ...]
    env: Mapping[str, str]
    cwd: str
    probes: probes.ContainerProbes | None = None


@dataclass(frozen=True)
class LocalPod:
    template: PodTemplate
    init_containers: tuple[LocalContainer, ...]
    containers: tuple[LocalContainer, ...]


def _suffix(*parts: object) -> str:
    digest = hashlib.sha256("/".join(map(str, parts)).encode()).digest()
    return "".join(_SUFFIX_ALPHABET[b % len(_SUFFIX_ALPHABET)] for b in digest[:5])


def subdomain(plan: Plan) -> str:
    js = plan.jobset
    network = js.get("spec", {}).get("network") or {}
    return str(network.get("subdomain") or js["metadata"]["name"])


def pod_templates(plan: Plan, uid: str, restarts: int = 0) -> list[PodTemplate]:
    """Every pod of the Plan's JobSet, replicatedJobs in order, as the controllers name them."""
    js = plan.jobset
    js_name = js["metadata"]["name"]
    namespace = js["metadata"].get("namespace") or "default"
    out: list[PodTemplate] = []
    global_index = 0
    for rjob in js.get("spec", {}).get("replicatedJobs") or ():
        rname = rjob["name"]
        replicas = int(rjob.get("replicas") or 1)
        job_tmpl = rjob.get("template") or {}
        job_spec = job_tmpl.get("spec") or {}
        pod_tmpl = job_spec.get("template") or {}
        pod_meta = pod_tmpl.get("metadata") or {}
        parallelism = int(job_spec.get("parallelism") or 1)
        deps = tuple((d["name"], d["status"]) for d in rjob.get("dependsOn") or ())
        for j in range(replicas):
            job_name = f"{js_name}-{rname}-{j}"
            key = hashlib.sha1(f"{namespace}/{job_name}".encode()).hexdigest()
            common = {
                jobset.LABEL_JOBSET_NAME: js_name,
                jobset.LABEL_JOBSET_UID: uid,
                jobset.LABEL_REPLICATED_JOB_NAME: rname,
                jobset.LABEL_REPLICATED_JOB_REPLICAS: str(replicas),
                jobset.LABEL_JOB_INDEX: str(j),
                jobset.LABEL_JOB_GLOBAL_INDEX: str(global_index),
                jobset.LABEL_JOB_KEY: key,
                jobset.LABEL_RESTART_ATTEMPT: str(restarts),
            }
            global_index += 1
            for i in range(parallelism):
                labels = {
                    **(job_tmpl.get("metadata") or {}).get("labels", {}),
                    **(pod_meta.get("labels") or {}),
                    **common,
                    jobset.LABEL_JOB_NAME: job_name,
                    jobset.LABEL_COMPLETION_INDEX: str(i),
                }
                annotations = {
                    **(pod_meta.get("annotations") or {}),
                    **common,
                    jobset.LABEL_COMPLETION_INDEX: str(i),
                }
                hostname = f"{job_name}-{i}"
                out.append(
                    PodTemplate(
                        job=rname,
                        job_index=j,
                        index=i,
                        hostname=hostname,
                        name=f"{hostname}-{_suffix(uid, restarts, hostname)}",
                        labels=labels,
                        annotations=annotations,
                        spec=pod_tmpl.get("spec") or {},
                        depends_on=deps,
                        backoff_limit=int(job_spec.get("backoffLimit") or 0),
                    )
                )
    return out


# ---------------------------------------------------------------------------------------------
# Network


def _declared_ports(spec: Obj) -> list[int]:
    out: list[int] = []
    for ctr in [*(spec.get("initContainers") or ()), *(spec.get("containers") or ())]:
        for p in ctr.get("ports") or ():
            port = p.get("containerPort")
            if isinstance(port, int) and port not in out:
                out.append(port)
    return out


@dataclass(frozen=True)
class Network:
    """Endpoints and ports of one run of a JobSet, mapped onto this host."""

    subdomain: str
    hosts: tuple[str, ...]
    ports: Mapping[tuple[str, int], int] = field(default_factory=dict)

    def _pattern(self) -> re.Pattern[str]:
        hosts = "|".join(re.escape(h) for h in sorted(self.hosts, key=len, reverse=True))
        return re.compile(
            rf"(?<![\w.-])(?P<host>{hosts})\.{re.escape(self.subdomain)}"
            r"(?:\.[a-z0-9-]+\.svc(?:\.[a-z0-9-]+)*|\.svc(?:\.[a-z0-9-]+)*)?"
            r"(?::(?P<port>\d+))?(?![\w-])"
        )

    def port_of(self, host: str, port: int) -> int:
        return self.ports.get((host, port), port)

    def first_port(self, port: int) -> int | None:
        """The local port of the first pod that declares ``port``."""
        for h in self.hosts:
            if (h, port) in self.ports:
                return self.ports[(h, port)]
        return None

    def rewrite(self, text: str, own_host: str = "") -> str:
        """Endpoints -> 127.0.0.1 (with their mapped port); ``localhost:p`` -> own port."""
        if self.hosts:

            def endpoint(m: re.Match[str]) -> str:
                port = m.group("port")
                if port is None:
                    return "127.0.0.1"
                return f"127.0.0.1:{self.port_of(m.group('host'), int(port))}"

            text = self._pattern().sub(endpoint, text)
        if own_host:

            def local(m: re.Match[str]) -> str:
                return f"{m.group(1)}:{self.port_of(own_host, int(m.group(2)))}"

            text = re.sub(r"(?<![\w.-])(localhost|127\.0\.0\.1|0\.0\.0\.0):(\d+)\b", local, text)
        return text

    def rewrite_env(self, value: str, own_host: str) -> str:
        """As :meth:`rewrite`, and a bare declared port becomes the first declaring pod's."""
        if value.isdigit():
            mapped = self.first_port(int(value))
            if mapped is not None:
                return str(mapped)
        return self.rewrite(value, own_host)


def network_for(
    plan: Plan, pods: list[PodTemplate], free_port: Callable[[], int] | None = None
) -> Network:
    """Map every declared container port of every pod to a free local port."""
    ports: dict[tuple[str, int], int] = {}
    for pod in pods:
        for port in _declared_ports(pod.spec):
            ports[(pod.hostname, port)] = free_port() if free_port else port
    return Network(subdomain(plan), tuple(p.hostname for p in pods), ports)


# ---------------------------------------------------------------------------------------------
# Volumes and paths


def volume_dirs(
    pod: PodTemplate, root: Path, kept: Mapping[str, Path] | None = None
) -> dict[str, Path]:
    """Volume name -> directory on this host: ``hostPath`` volumes keep their path, the volumes
    in ``kept`` (a job's outputs, :mod:`trainjob.local.outputs`) have theirs, the rest (scratch)
    are under ``root``."""
    out: dict[str, Path] = {}
    kept = kept or {}
    names: list[str] = [v["name"] for v in pod.spec.get("volumes") or ()]
    for ctr in [*(pod.spec.get("initContainers") or ()), *(pod.spec.get("containers") or ())]:
        names.extend(m["name"] for m in ctr.get("volumeMounts") or ())
    by_name = {v["name"]: v for v in pod.spec.get("volumes") or ()}
    for name in names:
        host_path = (by_name.get(name) or {}).get("hostPath")
        if host_path:
            out[name] = Path(host_path["path"])
        else:
            out[name] = kept.get(name) or root / name
    return out


def mount_map(ctr: Obj, dirs: Mapping[str, Path]) -> list[tuple[str, str]]:
    """(mountPath, host dir) pairs of a container, longest mount path first."""
    pairs: list[tuple[str, str]] = []
    for m in ctr.get("volumeMounts") or ():
        host = dirs.get(m["name"])
        if host is None:
            continue
        if m.get("subPath"):
            if corev1.descending_path_problems(str(m["subPath"])):  # from a patch: not validated
                raise PodConfigError(
                    f'volumeMount subPath {m["subPath"]!r} of volume "{m["name"]}" must be a '
                    "relative path inside its volume (no '..')"
                )
            host = host / m["subPath"]
        pairs.append((m["mountPath"].rstrip("/") or "/", str(host)))
    return sorted(pairs, key=lambda p: len(p[0]), reverse=True)


def rewrite_paths(text: str, mounts: list[tuple[str, str]]) -> str:
    """Replace each mount path, where it stands as a whole path or path prefix, by its host dir."""
    for mount, host in mounts:
        if mount == "/":
            continue
        pattern = rf"(?<![\w.-]){re.escape(mount)}(?=/|$|[^\w.-])"
        text = re.sub(pattern, lambda _m, h=host: h, text)  # type: ignore[misc]
    return text


def volume_files(volume: Obj, objects: Plan) -> dict[str, tuple[bytes, int]]:
    """Files (relative path -> (content, mode)) a Secret or ConfigMap volume shows."""
    if "secret" in volume:
        src = volume["secret"]
        obj = _find(objects, "Secret", src.get("secretName"))
        data = _secret_data(obj) if obj else {}
    elif "configMap" in volume:
        src = volume["configMap"]
        obj = _find(objects, "ConfigMap", src.get("name"))
        data = {k: v.encode() for k, v in ((obj or {}).get("data") or {}).items()}
    else:
        return {}
    default_mode = int(src.get("defaultMode") or 0o644)
    items = src.get("items")
    if not items:
        return {k: (v, default_mode) for k, v in data.items()}
    out: dict[str, tuple[bytes, int]] = {}
    for item in items:
        if item["key"] in data:
            if corev1.descending_path_problems(str(item["path"])):
                raise PodConfigError(
                    f"volume item path {item['path']!r} must be a relative path inside its "
                    "volume (no '..')"
                )
            out[item["path"]] = (data[item["key"]], int(item.get("mode") or default_mode))
    return out


def _find(objects: Plan, kind: str, name: str | None) -> Obj | None:
    for o in objects:
        if o.get("kind") == kind and (o.get("metadata") or {}).get("name") == name:
            return o
    return None


def _secret_data(obj: Obj) -> dict[str, bytes]:
    out = {k: base64.b64decode(v) for k, v in (obj.get("data") or {}).items()}
    out.update({k: v.encode() for k, v in (obj.get("stringData") or {}).items()})
    return out


# ---------------------------------------------------------------------------------------------
# Env


def _source_data(objects: Plan, kind: str, ref: Obj) -> dict[str, str] | None:
    """The data of the ConfigMap or Secret ``ref`` names; None when it is missing but optional."""
    obj = _find(objects, kind, ref.get("name"))
    if obj is None:
        if ref.get("optional"):
            return None
        raise PodConfigError(f'{kind.lower()} "{ref.get("name")}" not found')
    if kind == "Secret":
        return {k: v.decode() for k, v in _secret_data(obj).items()}
    return dict(obj.get("data") or {})


def _field_value(path: str, pod: PodTemplate, namespace: str) -> str | None:
    m = re.fullmatch(r"metadata\.(labels|annotations)\['([^']+)'\]", path)
    if m:
        src = pod.labels if m.group(1) == "labels" else pod.annotations
        return src.get(m.group(2))
    return {
        "metadata.name": pod.name,
        "metadata.namespace": namespace,
        "metadata.uid": pod.labels.get(jobset.LABEL_JOBSET_UID, ""),
        "spec.nodeName": os.uname().nodename,
        "spec.serviceAccountName": str(pod.spec.get("serviceAccountName") or "default"),
        "status.podIP": "127.0.0.1",
        "status.podIPs": "127.0.0.1",
        "status.hostIP": "127.0.0.1",
        "status.hostIPs": "127.0.0.1",
    }.get(path)


def _resource_value(ref: Obj, ctr: Obj) -> str:
    kind, _, res = str(ref.get("resource", "")).partition(".")
    values = ((ctr.get("resources") or {}).get(kind) or {}) if kind else {}
    raw = values.get(res)
    if raw is None and kind == "limits" and res == "cpu":
        return str(os.cpu_count() or 1)
    if raw is None:
        return "0"
    divisor = ref.get("divisor") or 1
    value = quantity.parse(raw).amount / quantity.parse(divisor).amount
    return str(math.ceil(value))


def resolve_env(ctr: Obj, pod: PodTemplate, objects: Plan, namespace: str) -> dict[str, str]:
    """The container's env, ``envFrom`` first, with ``valueFrom`` and ``$(VAR)`` resolved."""
    env: dict[str, str] = {}
    for src in ctr.get("envFrom") or ():
        prefix = src.get("prefix") or ""
        if "configMapRef" in src:
            ref, kind = src["configMapRef"], "ConfigMap"
        elif "secretRef" in src:
            ref, kind = src["secretRef"], "Secret"
        else:
            continue
        data = _source_data(objects, kind, ref)
        if data is not None:
            env.update({prefix + k: v for k, v in data.items()})
    for var in ctr.get("env") or ():
        name = var["name"]
        if "valueFrom" not in var:
            env[name] = expand(str(var.get("value") or ""), env)
            continue
        vf = var["valueFrom"]
        value: str | None
        if "fieldRef" in vf:
            value = _field_value(vf["fieldRef"]["fieldPath"], pod, namespace)
        elif "resourceFieldRef" in vf:
            value = _resource_value(vf["resourceFieldRef"], ctr)
        elif "secretKeyRef" in vf or "configMapKeyRef" in vf:
            kind = "Secret" if "secretKeyRef" in vf else "ConfigMap"
            ref = vf.get("secretKeyRef") or vf.get("configMapKeyRef")
            data = _source_data(objects, kind, ref)
            if data is None:
                continue
            if ref["key"] not in data:
                if ref.get("optional"):
                    continue
                raise PodConfigError(
                    f"couldn't find key {ref['key']} in {kind} {namespace}/{ref.get('name')}"
                )
            value = data[ref["key"]]
        else:
            value = None
        if value is not None:
            env[name] = value
    return env


def expand(value: str, env: Mapping[str, str]) -> str:
    """Kubernetes ``$(VAR)`` expansion; ``$$`` escapes; unknown references stay as written."""

    def sub(m: re.Match[str]) -> str:
        if m.group(0) == "$$":
            return "$"
        return env.get(m.group(1), m.group(0))

    return re.sub(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)", sub, value)


# ---------------------------------------------------------------------------------------------
# Commands


def search_path(base_env: Mapping[str, str]) -> str:
    """PATH with this interpreter's bin directory first (so a venv's torchrun is found)."""
    bindir = str(Path(sys.executable).parent)
    path = base_env.get("PATH", os.defpath)
    return path if path.split(os.pathsep)[0] == bindir else bindir + os.pathsep + path


def image_name(image: str) -> str:
    """``registry/repo:tag@digest`` -> ``registry/repo``."""
    name = image.split("@", 1)[0]
    head, _, tail = name.rpartition(":")
    return head if head and "/" not in tail else name


def builtin_entrypoint(ctr: Obj) -> tuple[list[str], dict[str, str]] | None:
    """(command, default env) for a container with no command whose image trainjob can run as
    its own module (the initializer images); None otherwise."""
    if ctr.get("command"):
        return None
    known = BUILTIN_IMAGES.get(image_name(str(ctr.get("image") or "")))
    if known is None:
        return None
    module, output = known
    return ["python", "-m", module], {"OUTPUT_PATH": output}


def stand_in(exe: str) -> str | None:
    """The trainjob module that runs ``exe``'s argv when ``exe`` is not installed, if any."""
    module = STAND_INS.get(exe)
    if module is None:
        return None
    try:
        return module if importlib.util.find_spec(module) is not None else None
    except ImportError:
        return None


def missing_extras(argv: list[str], env: Mapping[str, str]) -> str | None:
    """What a trainjob module this container runs (an initializer image, the ``tune`` stand-in)
    needs and this machine lacks, as a line naming the pip extra; None when all is there."""
    if len(argv) < 3 or argv[0] != sys.executable or argv[1] != "-m":
        return None
    module = argv[2]
    if module in ("trainjob.initializers.dataset", "trainjob.initializers.model"):
        uri = env.get("STORAGE_URI", "")
        scheme = extras.storage_scheme(uri)
        return extras.message(f"STORAGE_URI {uri!r}", extras.STORAGE_MODULES.get(scheme, ()))
    if module == STAND_INS["tune"]:
        return extras.message("'tune run' (trainjob's LLM trainer)", extras.LLM_TRAINER)
    if module == STAND_INS["trl"]:
        return extras.message("'trl' (trainjob's TRL trainer)", (*extras.LLM_TRAINER, "trl"))
    return None


_SHELLS = ("bash", "sh", "/bin/bash", "/bin/sh", "/usr/bin/bash")
# A script that installs something may install its launcher: it is left to run.
_INSTALLS = re.compile(
    r"\b(?:pip3?|uv pip|conda|mamba|micromamba|apt-get|apt)\s+install\b|PACKAGES=\("
)


def script_launcher_missing(argv: list[str], path: str) -> str | None:
    """The launcher (``torchrun``, ``mpirun``, ...) a ``bash -c SCRIPT`` container ends by running
    and this machine lacks, as a line naming what to install; None when it is there, the script
    installs things first (the SDK's ``packages_to_install``), or it ends otherwise. The SDK's
    CustomTrainer runs as such a script: without this a base install started the job and failed
    it with ``torchrun: command not found`` in its log."""
    if len(argv) != 3 or argv[0] not in _SHELLS or argv[1] != "-c" or _INSTALLS.search(argv[2]):
        return None
    lines = [line.strip() for line in argv[2].splitlines() if line.strip()]
    words = lines[-1].split() if lines else []
    if not words or words[0] not in INSTALL_HINTS or shutil.which(words[0], path=path):
        return None
    return f"command {words[0]!r} not found: {INSTALL_HINTS[words[0]]}"


def resolve_command(argv: list[str], path: str, where: str) -> list[str]:
    """``argv`` once its executable is found here (``python`` is this interpreter; ``tune``
    without torchtune is trainjob's LLM trainer), or a PodConfigError saying what to install."""
    exe = argv[0]
    if PYTHON_NAMES.match(exe):
        return [sys.executable, *argv[1:]]
    if os.sep not in exe and (exe in ALWAYS or shutil.which(exe, path=path) is None):
        module = stand_in(exe)
        if module is not None:
            return [sys.executable, "-m", module, *argv[1:]]
    if os.sep in exe:
        if os.access(exe, os.X_OK) and not os.path.isdir(exe):
            return argv
        raise PodConfigError(f"{where}: command {exe!r} does not exist on this machine")
    if shutil.which(exe, path=path) is None:
        hint = INSTALL_HINTS.get(exe, "install it, or put it on PATH")
        raise PodConfigError(f"{where}: command {exe!r} not found: {hint}")
    # Found on PATH, it runs as written, as the kubelet runs it: some programs read their argv[0]
    # (OpenMPI's mpirun takes an absolute /bin/mpirun as --prefix /, and refuses it).
    return argv


def local_processes(pod: PodTemplate, plan: Plan, env: Mapping[str, str]) -> int:
    """How many processes run at once on this machine as the pods of ``pod``'s replicatedJob:
    its pods (replicas x parallelism) times the workers torchrun starts in each
    (``PET_NPROC_PER_NODE`` when it is a number)."""
    pods_of_job = 1
    for rjob in plan.jobset.get("spec", {}).get("replicatedJobs") or ():
        if rjob.get("name") == pod.job:
            spec = (rjob.get("template") or {}).get("spec") or {}
            pods_of_job = int(rjob.get("replicas") or 1) * int(spec.get("parallelism") or 1)
    per_pod = env.get("PET_NPROC_PER_NODE", "1")
    return pods_of_job * (int(per_pod) if per_pod.isdigit() else 1)


def build_pod(
    pod: PodTemplate,
    network: Network,
    objects: Plan,
    volumes_root: Path,
    cwd: str,
    namespace: str,
    base_env: Mapping[str, str],
    kept: Mapping[str, Path] | None = None,
    extra_env: Mapping[str, str] | None = None,
) -> LocalPod:
    """The processes of one pod: resolved argv, env and working directory per container.

    ``kept`` maps the volumes that outlive the job to their directories (``volume_dirs``);
    ``extra_env`` is set in every container before the pod's own env (which may override it)."""
    dirs = volume_dirs(pod, volumes_root, kept)
    path = search_path(base_env)

    def one(ctr: Obj, kind: str) -> LocalContainer:
        where = f'{kind} "{ctr.get("name")}" of job "{pod.job}"'
        builtin = builtin_entrypoint(ctr)
        if builtin is not None:
            ctr = {**ctr, "command": builtin[0]}
        argv = [*(ctr.get("command") or ()), *(ctr.get("args") or ())]
        if not ctr.get("command"):
            raise PodConfigError(
                f"{where} has no command: an image's entrypoint cannot run locally; set "
                'spec.trainer.command (for example ["torchrun", "train.py"]) or a command in '
                "the runtime"
            )
        mounts = mount_map(ctr, dirs)
        env = resolve_env(ctr, pod, objects, namespace)
        if builtin is not None:
            env = {**builtin[1], **env}
        env = {
            k: rewrite_paths(network.rewrite_env(v, pod.hostname), mounts) for k, v in env.items()
        }
        argv = [expand(a, env) for a in argv]
        argv = [rewrite_paths(network.rewrite(a, pod.hostname), mounts) for a in argv]
        workdir = ctr.get("workingDir")
        run_dir = cwd
        if workdir:
            local = rewrite_paths(str(workdir), mounts)
            if os.path.isdir(local) or local != workdir:
                run_dir = local
        full_env = {**base_env, "PATH": path, "HOSTNAME": pod.hostname}
        full_env[homes.ENV_JOB_TMP] = str(homes.job_tmp_dir(volumes_root))
        # A pod's /tmp is its own on a cluster: here the job's tmp/, removed with the job, so
        # mktemp and tempfile leave nothing in the system's /tmp (the pod's env may still set it).
        full_env["TMPDIR"] = full_env[homes.ENV_JOB_TMP]
        full_env.setdefault("PYTHONUNBUFFERED", "1")
        full_env.setdefault("GLOO_SOCKET_IFNAME", "lo0" if sys.platform == "darwin" else "lo")
        # The Job controller sets it in every container of an Indexed Job's pod (JobSet's are).
        full_env["JOB_COMPLETION_INDEX"] = str(pod.index)
        full_env.update(extra_env or {})
        full_env.update(env)
        if cores.ENV not in full_env:  # this pod's share of the cores its siblings also use
            full_env[cores.ENV] = str(cores.share(local_processes(pod, objects, full_env)))
        argv = resolve_command(argv, full_env.get("PATH", path), where)
        missing = missing_extras(argv, full_env) or script_launcher_missing(
            argv, full_env.get("PATH", path)
        )
        if missing:
            raise PodConfigError(f"{where}: {missing}")
        checks = probes.parse(
            ctr,
            port_of=lambda p: network.port_of(pod.hostname, p),
            host_of=lambda h: network.rewrite(h, pod.hostname) if h else "127.0.0.1",
            argv_of=lambda cmd: [
                rewrite_paths(network.rewrite(a, pod.hostname), mounts) for a in cmd
            ],
        )
        return LocalContainer(str(ctr.get("name")), tuple(argv), full_env, run_dir, checks)

    inits = tuple(one(x, "init container") for x in pod.spec.get("initContainers") or ())
    ctrs = tuple(one(x, "container") for x in pod.spec.get("containers") or ())
    return LocalPod(pod, inits, ctrs)
