"""Flux: the trainer's pods become a Flux cluster that runs the command (upstream ``plugins/flux``,
v2.2+).

* ``enforce_ml_policy`` (with what upstream's PlainML does for a Flux runtime: the trainer's pod
  count from ``trainer.numNodes`` and ``trainer.env`` on its ``node`` container): on job ``node``,
  the init container ``flux-installer`` (image ``FLUX_VIEW_IMAGE``) that copies a Flux view into
  the ``flux-install`` emptyDir; the volumes ``spack-install``, ``flux-install``, the entrypoint
  ConfigMap, ``shared-memory`` (memory) and the ``flux-curve`` Secret, mounted in the ``node``
  container; the command becomes ``/bin/bash /etc/flux-config/entrypoint.sh "<command args>"``
  (the original command and args joined, args cleared).
* ``build``: the ConfigMap ``<trainjob>-flux-entrypoint`` (``init.sh`` writing the broker config
  and host list, ``entrypoint.sh`` starting the brokers and ``flux run -N <nodes> -n <tasks>``) and
  the Secret ``<trainjob>-flux-curve`` (a ZeroMQ CURVE certificate whose X25519 key is derived
  from the TrainJob's uid, so every build gives the same one), both owned by the TrainJob.
* ``validate``: ``numProcPerNode`` at least 1; the runtime's ``node`` job has no init container
  named ``flux-installer``.

Broker settings ``FLUX_VIEW_IMAGE``, ``FLUX_NETWORK_DEVICE`` and ``FLUX_QUEUE_POLICY`` come from
the defaults, then the runtime's ``node`` env, then ``trainer.env``. The scripts are upstream's,
verbatim (:mod:`trainjob.runtime.plugins.flux_scripts`).

Deliberate difference: without ``spec.trainer`` (or without ``trainer.numNodes``) upstream's plugin
dereferences nil pointers and its reconcile panics on every try, so such a TrainJob never runs;
here the pod count (``mlPolicy.numNodes``, default 1) and the runtime's command are used.
"""

from __future__ import annotations

import base64
import hashlib
from typing import Any

from trainjob.api import constants as c
from trainjob.api.trainer import FluxMLPolicySource, TrainJob
from trainjob.errors import FieldError
from trainjob.runtime.info import Info, Obj, num_gpus, upsert_by
from trainjob.runtime.kinds import CONFIGMAP, SECRET, Kind
from trainjob.runtime.plugins import flux_scripts
from trainjob.runtime.plugins.jobset import owned_meta
from trainjob.runtime.plugins.trainer import enforce_trainer, node_resources

NAME = "Flux"

INSTALLER = "flux-installer"
INSTALLER_IMAGE = "ghcr.io/converged-computing/flux-view-ubuntu:tag-jammy"
CONFIG_PATH = "/etc/flux-config"
INSTALL_VOLUME, INSTALL_PATH = "flux-install", "/mnt/flux"
CURVE_VOLUME, CURVE_PATH = "flux-curve", "/curve"
MEMORY_VOLUME, MEMORY_PATH = "shared-memory", "/dev/shm"
SPACK_VOLUME, SPACK_PATH = "spack-install", "/opt/software"
VIEW_ROOT = "/opt/view"

DEFAULT_SETTINGS = {
    "FLUX_VIEW_IMAGE": INSTALLER_IMAGE,
    "FLUX_NETWORK_DEVICE": "eth0",
    "FLUX_QUEUE_POLICY": "fcfs",
}


def _policy(info: Info | None) -> FluxMLPolicySource | None:
    if info is None or info.ml_policy is None:
        return None
    return info.ml_policy.flux


def configmap_name(trainjob: TrainJob) -> str:
    return f"{trainjob.metadata.name}-flux-entrypoint"


def curve_secret_name(trainjob: TrainJob) -> str:
    return f"{trainjob.metadata.name}-flux-curve"


def settings(info: Info, trainjob: TrainJob) -> dict[str, str]:
    """Broker settings: defaults, then the runtime's node env, then ``trainer.env``."""
    out = dict(DEFAULT_SETTINGS)
    ps = info.pod_set_by_ancestor(c.ANCESTOR_TRAINER)
    node = ps.container(c.CONTAINER_NODE) if ps is not None else None
    for env in (node or {}).get("env") or ():
        if env.get("name") in out and env.get("value") is not None:
            out[env["name"]] = str(env["value"])
    trainer = trainjob.spec.trainer
    for e in (trainer.env if trainer is not None else None) or ():
        if e.name in out:
            out[e.name] = e.value or ""
    return out


def _range(size: int, start: int = 0) -> str:
    return str(start) if size == 1 else f"{start}-{start + size - 1}"


def _nodes(info: Info, trainjob: TrainJob) -> int:
    trainer = trainjob.spec.trainer
    if trainer is not None and trainer.num_nodes is not None:
        return trainer.num_nodes
    ps = info.pod_set_by_ancestor(c.ANCESTOR_TRAINER)
    return ps.count if ps is not None else 1


def _tasks(info: Info, trainjob: TrainJob) -> int:
    trainer = trainjob.spec.trainer
    if trainer is not None and isinstance(trainer.num_proc_per_node, int):
        return trainer.num_proc_per_node
    policy = _policy(info)
    npp = policy.num_proc_per_node if policy is not None else None
    return 1 if npp is None else npp


def sprintf(template: str, *values: str) -> str:
    """Go's ``fmt.Sprintf`` with ``%s`` verbs only (what the templates hold)."""
    parts = template.split("%s")
    assert len(parts) == len(values) + 1, "template and values disagree"
    out = [parts[0]]
    for value, part in zip(values, parts[1:], strict=True):
        out += [value, part]
    return "".join(out)


def init_script(info: Info, trainjob: TrainJob, s: dict[str, str]) -> str:
    name = trainjob.metadata.name or ""
    hosts = f"{name}-{c.JOB_NODE}-0-[{_range(_nodes(info, trainjob))}]"
    fqdn = f"{name}.{trainjob.metadata.namespace}.svc.cluster.local"
    broker = sprintf(
        flux_scripts.BROKER_TOML,
        f"tcp://{s['FLUX_NETWORK_DEVICE']}:%p",
        f"tcp://%h.{fqdn}:%p",
        hosts,
        s["FLUX_QUEUE_POLICY"],
    )
    return sprintf(flux_scripts.INIT_SH, VIEW_ROOT, f"{name}-0", hosts, broker)


def entrypoint_script(info: Info, trainjob: TrainJob) -> str:
    name = trainjob.metadata.name or ""
    nodes, tasks = _nodes(info, trainjob), _tasks(info, trainjob)
    flags = f"-N {nodes} -n {tasks * nodes}"
    rspec = f"--cores={_range(tasks)}"
    gpus = num_gpus(node_resources(info, trainjob))
    if gpus > 0:
        flags += f" -g {gpus}"
        rspec += f" --gpu={_range(gpus)}"
    return sprintf(flux_scripts.ENTRYPOINT_SH, rspec, f"{name}-{c.JOB_NODE}-0-0", flags)


_Z85 = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"


def z85(data: bytes) -> str:
    """ZeroMQ's Z85 encoding (4 bytes -> 5 characters)."""
    out = []
    for i in range(0, len(data) - len(data) % 4, 4):
        value = int.from_bytes(data[i : i + 4], "big")
        out += [_Z85[(value // 85**k) % 85] for k in (4, 3, 2, 1, 0)]
    return "".join(out)


def curve_certificate(trainjob: TrainJob) -> str:
    """The CURVE certificate ``flux keygen`` would write, keyed by sha256(uid) (upstream's rule)."""
    from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

    seed = hashlib.sha256((trainjob.metadata.uid or "").encode()).digest()
    private = X25519PrivateKey.from_private_bytes(seed)
    public = private.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
    return (
        "#  ZeroMQ CURVE Secret Certificate\n"
        "#  Generated by Kubeflow Trainer\n\n"
        "metadata\n"
        f'    name = "{trainjob.metadata.name}"\n'
        "curve\n"
        f'    public-key = "{z85(public)}"\n'
        f'    secret-key = "{z85(seed)}"\n'
    )


class Flux:
    name = NAME

    def kinds(self) -> tuple[Kind, ...]:
        """The kinds it plans (the entrypoint ConfigMap and the CURVE Secret) and how each executor treats them."""
        return (CONFIGMAP, SECRET)

    def validate(self, info: Info | None, old: TrainJob | None, new: TrainJob) -> list[FieldError]:
        policy = _policy(info)
        if info is None or policy is None:
            return []
        errors: list[FieldError] = []
        npp = policy.num_proc_per_node
        trainer = new.spec.trainer
        if trainer is not None and isinstance(trainer.num_proc_per_node, int):
            npp = trainer.num_proc_per_node
        if npp is not None and npp < 1:
            errors.append(
                FieldError.invalid(
                    "spec.trainer.numProcPerNode",
                    npp,
                    "must be greater than or equal to 1 for Flux TrainJob",
                )
            )
        for ps in info.pod_sets:
            if ps.name != c.JOB_NODE:
                continue
            for ctr in ps.init_containers:
                if ctr.get("name") == INSTALLER:
                    errors.append(
                        FieldError.invalid(
                            "spec.trainer.initContainers",
                            INSTALLER,
                            "InitContainer 'flux-installer' is reserved",
                        )
                    )
        return errors

    def enforce_ml_policy(self, info: Info, trainjob: TrainJob) -> None:
        if _policy(info) is None:
            return
        enforce_trainer(info, trainjob)  # what upstream's PlainML does for a Flux runtime
        s = settings(info, trainjob)
        cm = configmap_name(trainjob)
        trainer = trainjob.spec.trainer
        trainer_ps = info.pod_set_by_ancestor(c.ANCESTOR_TRAINER)
        trainer_node = trainer_ps.container(c.CONTAINER_NODE) if trainer_ps is not None else None
        if trainer_node is not None and trainer_ps is not None:
            # The runtime's command (and the trainer's command and args), joined for the
            # entrypoint; the container keeps only the runtime's own args, as upstream's builder.
            if trainer is None:
                command = list(trainer_node.get("command") or [])
                args: list[str] = []
            else:
                command = list(trainer.command or trainer_ps.runtime_command or [])
                args = list(trainer.args or [])
                if trainer_ps.runtime_args is None:
                    trainer_node.pop("args", None)
                else:
                    trainer_node["args"] = list(trainer_ps.runtime_args)
            original = " ".join([*command, *args]).strip()
            trainer_node["command"] = ["/bin/bash", f"{CONFIG_PATH}/entrypoint.sh", original]
        installer: Obj = {
            "name": INSTALLER,
            "image": s["FLUX_VIEW_IMAGE"],
            "command": ["/bin/bash", f"{CONFIG_PATH}/init.sh"],
            "volumeMounts": [
                {"name": INSTALL_VOLUME, "mountPath": INSTALL_PATH},
                {"name": cm, "mountPath": CONFIG_PATH, "readOnly": True},
            ],
        }
        volumes: list[Obj] = [
            {"name": SPACK_VOLUME, "emptyDir": {}},
            {"name": INSTALL_VOLUME, "emptyDir": {}},
            {"name": cm, "configMap": {"name": cm, "defaultMode": 0o755}},
            {"name": MEMORY_VOLUME, "emptyDir": {"medium": "Memory"}},
            {
                "name": CURVE_VOLUME,
                "secret": {"secretName": curve_secret_name(trainjob), "defaultMode": 0o400},
            },
        ]
        mounts: list[Obj] = [
            {"name": INSTALL_VOLUME, "mountPath": INSTALL_PATH},
            {"name": SPACK_VOLUME, "mountPath": SPACK_PATH},
            {"name": cm, "mountPath": CONFIG_PATH, "readOnly": True},
            {"name": CURVE_VOLUME, "mountPath": CURVE_PATH, "readOnly": True},
            {"name": MEMORY_VOLUME, "mountPath": MEMORY_PATH, "readOnly": True},
        ]
        for ps in info.pod_sets:
            if ps.name != c.JOB_NODE:
                continue
            pod = ps.pod_spec
            upsert_by(pod.setdefault("volumes", []), "name", *volumes)
            pod.setdefault("initContainers", []).append(dict(installer))
            node = ps.container(c.CONTAINER_NODE)
            if node is not None:
                upsert_by(node.setdefault("volumeMounts", []), "name", *mounts)

    def build(self, info: Info, trainjob: TrainJob, options: Any) -> list[Obj]:
        if _policy(info) is None:
            return []
        s = settings(info, trainjob)
        configmap: Obj = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": owned_meta(trainjob, configmap_name(trainjob)),
            "data": {
                "entrypoint.sh": entrypoint_script(info, trainjob),
                "init.sh": init_script(info, trainjob, s),
            },
        }
        cert = curve_certificate(trainjob).encode()
        secret: Obj = {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": owned_meta(trainjob, curve_secret_name(trainjob)),
            "data": {"curve.cert": base64.b64encode(cert).decode()},
        }
        return [configmap, secret]
