"""A pod of the Plan as containers: the engine command line of each of its containers.

Pure (nothing is started; the only file written is none): used by the container runner each time a
pod starts. What a pod keeps from the cluster, unlike on the process backend, is its own view of
the world: its image, its hostname, its address on a network of the job's own, every pod's DNS
names ``<hostname>.<subdomain>`` (and the ``.<namespace>.svc[.cluster.local]`` forms, in its
/etc/hosts), its declared ports as written, and its volumes at their ``mountPath``. Env is resolved as the kubelet does
(:func:`trainjob.local.job.container_env.resolve_env`, with ``status.podIP`` the pod's address), and passed by
name, so no value shows in the process table. Kubernetes' command semantics hold: ``command``
replaces the image's entrypoint (and drops its default arguments), ``args`` its arguments.
``resources.limits`` become the container's CPU and memory limits.
"""

from __future__ import annotations

import json
import re
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trainjob.api import constants as c
from trainjob.api import quantity
from trainjob.local.job import pods, probes
from trainjob.local.job.containers.engine import LABEL_JOB, LABEL_UID, Engine
from trainjob.local.job.containers.settings import ContainerSettings
from trainjob.local.state import home as homes
from trainjob.runtime.plan import Plan

Obj = dict[str, Any]

# Variables the engine's CLI reads itself: their values go in an env file (mode 0600), not in
# the CLI's environment, where they would change how the CLI runs.
_CLI_OWN = re.compile(
    r"^(PATH|HOME|TMPDIR|USER|SHELL|PWD|LANG|LC_\w+|TZ|XDG_\w+|CONTAINERS?_\w+|DOCKER_\w+|"
    r"BUILDAH_\w+|STORAGE_\w+|REGISTRY_AUTH_FILE|LD_\w+|GO\w+|HTTPS?_PROXY|NO_PROXY|"
    r"https?_proxy|no_proxy|NOTIFY_SOCKET|DBUS_\w+)$"
)
_CPU_NANO = 1_000_000_000
# Where a container sees the run's checkpoint directory ($TRAINJOB_CHECKPOINT_DIR).
CHECKPOINT_MOUNT = "/var/run/trainjob/checkpoints"


@dataclass(frozen=True)
class ContainerProcess(pods.LocalContainer):
    """A container of a pod, as the engine CLI process that runs it attached.

    ``argv``/``env``/``cwd`` start the CLI; ``container`` is the engine's name for it (to remove
    it), ``image`` what it runs, ``env_file`` the file of values that cannot go by name.
    """

    container: str = ""
    image: str = ""
    env_file: str = ""
    env_file_text: str = ""
    timeout: int | None = None


@dataclass(frozen=True)
class PodNetwork:
    """The job's network: its name, the pods' subdomain and each pod hostname's address."""

    name: str
    subdomain: str
    addresses: Mapping[str, str] = field(default_factory=dict)


def qualify(image: str, engine: str) -> str:
    """An image reference as Kubernetes resolves it: a name without a registry is Docker Hub's
    (``pytorch/pytorch:2.7`` -> ``docker.io/pytorch/pytorch:2.7``, ``python`` ->
    ``docker.io/library/python``); docker does this itself, podman asks its short-name rules."""
    if engine == "docker" or not image:
        return image
    first, _, rest = image.partition("/")
    if rest and ("." in first or ":" in first or first == "localhost"):
        return image
    return f"docker.io/{image}" if rest else f"docker.io/library/{image}"


def image_of(ctr: Obj, job: str, settings: ContainerSettings, engine: str) -> str:
    """The image a container runs: the step's replacement (ContainerBackendConfig's
    ``dataset_initializer_image``...), else its own or what ``images`` maps it to, qualified for
    the engine."""
    own = str(ctr.get("image") or "")
    return qualify(settings.step_images.get(job) or settings.images.get(own) or own, engine)


def cpus(value: Any) -> str:
    """A CPU quantity (``500m``, ``2``) as ``--cpus`` takes it (``0.5``, ``2``)."""
    nano = quantity.parse(value).amount * _CPU_NANO
    return f"{max(float(nano) / _CPU_NANO, 0.01):g}"


def memory(value: Any) -> str:
    """A memory quantity (``512Mi``, ``1G``) in bytes, as ``--memory`` takes it."""
    return f"{max(int(quantity.parse(value).amount), 6 * 1024 * 1024)}b"


def limits(ctr: Obj) -> list[str]:
    out: list[str] = []
    lim = (ctr.get("resources") or {}).get("limits") or {}
    if lim.get("cpu") is not None:
        out += ["--cpus", cpus(lim["cpu"])]
    if lim.get("memory") is not None:
        mem = memory(lim["memory"])
        out += ["--memory", mem, "--memory-swap", mem]
    return out


def mounts(
    ctr: Obj, dirs: Mapping[str, Path], read_only_volumes: set[str], settings: ContainerSettings
) -> list[str]:
    """``-v HOST:PATH[:ro]`` for each volumeMount (subPath included), then the extra mounts."""
    out: list[str] = []
    for m in ctr.get("volumeMounts") or ():
        host = dirs.get(m["name"])
        if host is None:
            continue
        if m.get("subPath"):
            host = host / m["subPath"]
        ro = m.get("readOnly") or m["name"] in read_only_volumes
        out += ["-v", f"{host}:{m['mountPath']}" + (":ro" if ro else "")]
    for extra in settings.mounts:
        out += ["-v", f"{extra.source}:{extra.target}" + (":ro" if extra.read_only else "")]
    return out


def _pod_ip_vars(ctr: Obj) -> list[str]:
    return [
        v["name"]
        for v in ctr.get("env") or ()
        if ((v.get("valueFrom") or {}).get("fieldRef") or {}).get("fieldPath")
        in ("status.podIP", "status.podIPs")
    ]


def env_options(env: Mapping[str, str], env_file: str) -> tuple[list[str], dict[str, str], str]:
    """(options, values for the CLI's environment, env file text) for a container's env."""
    opts: list[str] = []
    by_name: dict[str, str] = {}
    lines: list[str] = []
    for name, value in env.items():
        if _CLI_OWN.match(name):
            if "\n" in value:
                raise pods.PodConfigError(
                    f"env {name} has a line break, which the container engine cannot pass for "
                    "this name"
                )
            lines.append(f"{name}={value}")
        else:
            opts += ["-e", name]
            by_name[name] = value
    if lines:
        opts += ["--env-file", env_file]
    return opts, by_name, "".join(f"{ln}\n" for ln in lines)


def dns_names(hostname: str, subdomain: str, namespace: str) -> list[str]:
    """A pod's DNS names, as a headless Service of a JobSet gives them."""
    base = f"{hostname}.{subdomain}"
    return [base, f"{base}.{namespace}.svc", f"{base}.{namespace}.svc.cluster.local"]


def host_entries(network: PodNetwork, namespace: str) -> list[str]:
    """``--add-host NAME:ADDRESS`` for every DNS name of every pod of the job."""
    out: list[str] = []
    for hostname, address in network.addresses.items():
        for name in dns_names(hostname, network.subdomain, namespace):
            out += ["--add-host", f"{name}:{address}"]
    return out


@dataclass(frozen=True)
class PodContext:
    """What every pod of one job shares on the container backend."""

    engine: Engine
    settings: ContainerSettings
    network: PodNetwork
    job: tuple[str, str, str]  # namespace, name, uid
    user: Sequence[str] = ()  # --user / --userns options for every container
    scratch: Path = Path("/tmp")  # where env files go (the job's directory)


def build_pod(
    pod: pods.PodTemplate,
    plan: Plan,
    volumes_root: Path,
    ctx: PodContext,
    kept: Mapping[str, Path] | None = None,
    extra_env: Mapping[str, str] | None = None,
) -> pods.LocalPod:
    """The engine command lines of ``pod``'s init containers and containers.

    ``kept``: the volumes that outlive the job, at their directories (trainjob.local.job.outputs);
    ``extra_env``: set in every container before its own env. ``$TRAINJOB_CHECKPOINT_DIR`` there
    is a directory of this host: it is mounted at :data:`CHECKPOINT_MOUNT` and the variable says
    that path, so code in the image resumes from it as it does on the process backend."""
    namespace, name, uid = ctx.job
    engine = ctx.engine
    dirs = pods.volume_dirs(pod, volumes_root, kept)
    common = {"JOB_COMPLETION_INDEX": str(pod.index), **(extra_env or {})}
    extra_mounts: list[str] = []
    checkpoints = common.get(homes.ENV_CHECKPOINT_DIR)
    if checkpoints:
        common[homes.ENV_CHECKPOINT_DIR] = CHECKPOINT_MOUNT
        extra_mounts = ["-v", f"{checkpoints}:{CHECKPOINT_MOUNT}"]
    by_name = {v["name"]: v for v in pod.spec.get("volumes") or ()}
    read_only = {n for n, v in by_name.items() if "secret" in v or "configMap" in v}
    address = ctx.network.addresses.get(pod.hostname, "")
    hosts = host_entries(ctx.network, namespace)
    labels = {**pod.labels, LABEL_UID: uid, LABEL_JOB: f"{namespace}/{name}",
              "trainer.kubeflow.org/trainjob-name": name}  # fmt: skip
    security = pod.spec.get("securityContext") or {}
    initializer = pod.job in (c.JOB_DATASET_INITIALIZER, c.JOB_MODEL_INITIALIZER)

    def one(ctr: Obj, kind: str, first: bool) -> ContainerProcess:
        cname = str(ctr.get("name"))
        where = f'{kind} "{cname}" of job "{pod.job}"'
        image = image_of(ctr, pod.job, ctx.settings, engine.flavour)
        if not image:
            raise pods.PodConfigError(f"{where} has no image")
        container = f"{pod.name}-{cname}-{secrets.token_hex(3)}"
        env = {**common, **pods.resolve_env(ctr, pod, plan, namespace)}
        for var in _pod_ip_vars(ctr):
            env[var] = address
        env_file = str(ctx.scratch / f"{container}.env")
        env_opts, env_values, env_text = env_options(env, env_file)
        sc = {**security, **(ctr.get("securityContext") or {})}
        user = list(ctx.user)
        if sc.get("runAsUser") is not None:
            group = sc.get("runAsGroup")
            user = [*(o for o in user if o in ("--userns", "keep-id")),
                    "--user", f"{sc['runAsUser']}" + (f":{group}" if group is not None else "")]  # fmt: skip
        argv = [*engine.base(), "run", "--rm", "--name", container,
                "--hostname", pod.hostname, "--pull", "never"]  # fmt: skip
        argv += ["--network", ctx.network.name]
        if first and address:
            argv += ["--ip", address]
        argv += hosts
        argv += [a for k, v in labels.items() for a in ("--label", f"{k}={v}")]
        argv += user
        if sc.get("readOnlyRootFilesystem"):
            argv += ["--read-only"]
        argv += env_opts
        argv += mounts(ctr, dirs, read_only, ctx.settings)
        argv += extra_mounts
        argv += limits(ctr)
        if ctr.get("workingDir"):
            argv += ["--workdir", str(ctr["workingDir"])]
        command = [str(a) for a in ctr.get("command") or ()]
        args = [pods.expand(str(a), env) for a in ctr.get("args") or ()]
        if command:
            argv += ["--entrypoint", json.dumps([pods.expand(a, env) for a in command])]
        argv += [image, *args]
        timeout = ctx.settings.initializer_timeout if initializer else None
        if timeout:
            argv = ["timeout", "--kill-after=5", str(timeout), *argv]
        checks = probes.parse(
            ctr,
            port_of=lambda p: p,
            host_of=lambda h: ctx.network.addresses.get(h.split(".")[0], h) if h else address,
            argv_of=lambda cmd: [*engine.base(), "exec", container, *cmd],
        )
        return ContainerProcess(
            name=cname,
            argv=tuple(argv),
            env=engine.env(env_values),
            cwd=str(ctx.scratch),
            probes=checks,
            container=container,
            image=image,
            env_file=env_file if env_text else "",
            env_file_text=env_text,
            timeout=timeout,
        )

    inits = tuple(one(x, "init container", True) for x in pod.spec.get("initContainers") or ())
    main = pod.spec.get("containers") or ()
    ctrs = tuple(one(x, "container", i == 0) for i, x in enumerate(main))
    return pods.LocalPod(pod, inits, ctrs)
