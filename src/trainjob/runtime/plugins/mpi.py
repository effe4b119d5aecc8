"""MPI: an OpenMPI launcher, its workers reached over SSH, and a hostfile (upstream ``plugins/mpi``).

* ``enforce_ml_policy``: pods of job ``node`` from ``trainer.numNodes`` (one fewer with
  ``runLauncherAsNode``, at least one); the SSH volume ``mpi-ssh-auth`` on jobs ``node`` and
  ``launcher``, mounted at ``sshAuthMountPath`` in their ``node`` containers; on the launcher also
  the hostfile volume at ``/etc/mpi`` and the ``OMPI_MCA_*`` envs; then what upstream's JobSet
  builder does for the trainer: ``trainer.env`` on the trainer's ``node`` container and, with
  ``runLauncherAsNode``, ``trainer.env`` and ``resourcesPerNode`` on job ``node`` too.
* ``build``: the SSH Secret ``<trainjob>-mpi-ssh-auth`` (``kubernetes.io/ssh-auth``, immutable)
  and the hostfile ConfigMap ``<trainjob>-mpi-hostfile``, one line ``<endpoint> slots=<n>`` per
  pod of job ``node`` (and ``launcher`` with ``runLauncherAsNode``), both owned by the TrainJob.
* ``validate``: numNodes against ``runLauncherAsNode``, reserved ``OMPI_MCA_*`` envs, the MPI
  implementation.

The compiler is pure, so the key pair comes from ``CompileOptions.ssh_private_key`` /
``ssh_public_key`` (made by :func:`trainjob.executor.sshkeys.generate_ssh_key_pair`). Without them the Secret
is planned with empty ``data``: whoever applies the plan must generate a pair and compile again
(upstream creates the Secret only when it does not exist yet, so a running job keeps its keys).
"""

from __future__ import annotations

import base64
from typing import Any

from trainjob.api import constants as c
from trainjob.api.base import to_dict
from trainjob.api.trainer import MPIMLPolicySource, TrainJob
from trainjob.errors import FieldError, InvalidError
from trainjob.runtime.info import Info, Obj, num_gpus, upsert_by, upsert_env
from trainjob.runtime.kinds import CONFIGMAP, SECRET, Kind
from trainjob.runtime.plugins.jobset import owned_meta
from trainjob.runtime.plugins.trainer import node_resources, reserved_envs_error
from trainjob.runtime.resources import merge_resources

NAME = "MPI"

DEFAULT_SSH_AUTH_MOUNT_PATH = "/root/.ssh"


def _policy(info: Info | None) -> MPIMLPolicySource | None:
    if info is None or info.ml_policy is None:
        return None
    return info.ml_policy.mpi


def _implementation(mpi: MPIMLPolicySource) -> str:
    return c.MPI_IMPL_OPENMPI if mpi.mpi_implementation is None else mpi.mpi_implementation


def secret_name(trainjob: TrainJob) -> str:
    return f"{trainjob.metadata.name}{c.MPI_SSH_AUTH_SECRET_SUFFIX}"


def hostfile_name(trainjob: TrainJob) -> str:
    return f"{trainjob.metadata.name}{c.MPI_HOSTFILE_CONFIGMAP_SUFFIX}"


def num_proc_per_node(info: Info, trainjob: TrainJob) -> int:
    """Slots per node: ``trainer.numProcPerNode``, else the runtime's, where 1 means one per GPU."""
    mpi = _policy(info)
    trainer = trainjob.spec.trainer
    npp = trainer.num_proc_per_node if trainer is not None else None
    if isinstance(npp, int) or (isinstance(npp, str) and npp.isdigit()):
        return int(npp)
    value = 1 if mpi is None or mpi.num_proc_per_node is None else mpi.num_proc_per_node
    if value == 1:
        gpus = num_gpus(node_resources(info, trainjob))
        if gpus > 1:
            return gpus
    return value


def _ssh_volume(trainjob: TrainJob) -> Obj:
    return {
        "name": c.MPI_SSH_AUTH_VOLUME,
        "secret": {
            "secretName": secret_name(trainjob),
            "items": [
                {
                    "key": c.SSH_AUTH_PRIVATE_KEY,
                    "path": c.MPI_SSH_PRIVATE_KEY_FILE,
                    "mode": c.MPI_SSH_PRIVATE_KEY_FILE_MODE,
                },
                {
                    "key": c.MPI_SSH_PUBLIC_KEY,
                    "path": c.MPI_SSH_PUBLIC_KEY_FILE,
                    "mode": c.MPI_SSH_PUBLIC_KEY_FILE_MODE,
                },
                {
                    "key": c.MPI_SSH_PUBLIC_KEY,
                    "path": c.MPI_SSH_AUTHORIZED_KEYS,
                    "mode": c.MPI_SSH_PUBLIC_KEY_FILE_MODE,
                },
            ],
            "defaultMode": c.MPI_SSH_AUTH_DEFAULT_MODE,
        },
    }


def _hostfile_volume(trainjob: TrainJob) -> Obj:
    return {
        "name": c.MPI_HOSTFILE_VOLUME,
        "configMap": {
            "name": hostfile_name(trainjob),
            "items": [
                {
                    "key": c.MPI_HOSTFILE_NAME,
                    "path": c.MPI_HOSTFILE_NAME,
                    "mode": c.MPI_HOSTFILE_MODE,
                }
            ],
        },
    }


def openmpi_envs(slots: int) -> list[Obj]:
    return [
        {"name": c.OPENMPI_ENV_HOSTFILE, "value": f"{c.MPI_HOSTFILE_DIR}/{c.MPI_HOSTFILE_NAME}"},
        {"name": c.OPENMPI_ENV_KEEP_FQDN, "value": "true"},
        {"name": c.OPENMPI_ENV_DEFAULT_SLOTS, "value": str(slots)},
        {"name": c.OPENMPI_ENV_RSH_ARGS, "value": c.OPENMPI_RSH_ARGS_DEFAULT},
    ]


def _unsupported(impl: str) -> FieldError:
    return FieldError.invalid(
        "spec.mlPolicy.mpi.mpiImplementation",
        impl,
        f"MPI implementation for {impl} doesn't supported",
    )


class MPI:
    name = NAME

    def kinds(self) -> tuple[Kind, ...]:
        """The kinds it plans (the SSH Secret and the hostfile ConfigMap) and how each executor treats them."""
        return (SECRET, CONFIGMAP)

    def validate(self, info: Info | None, old: TrainJob | None, new: TrainJob) -> list[FieldError]:
        errors: list[FieldError] = []
        mpi = _policy(info)
        if info is None or mpi is None:
            return errors
        trainer = new.spec.trainer
        if (
            trainer is not None
            and (1 if trainer.num_nodes is None else trainer.num_nodes) >= 2
            and mpi.run_launcher_as_node
            and (info.pod_set(c.JOB_LAUNCHER) is None or info.pod_set(c.JOB_NODE) is None)
        ):
            errors.append(
                FieldError.invalid(
                    "spec.trainer.numNodes",
                    trainer.num_nodes,
                    "must have 1 when MPI trainingRuntime with enabled runLauncherAsNode does "
                    "not have either launcher and node",
                )
            )
        if trainer is not None:
            npp = trainer.num_proc_per_node
            if isinstance(npp, str) and not npp.isdigit():
                errors.append(
                    FieldError.invalid(
                        "spec.trainer.numProcPerNode", npp, "must be an integer for MPI runtimes"
                    )
                )
            reserved = reserved_envs_error(trainer, c.MPI_RESERVED_ENVS)
            if reserved is not None:
                errors.append(reserved)
        if _implementation(mpi) != c.MPI_IMPL_OPENMPI:
            errors.append(_unsupported(_implementation(mpi)))
        return errors

    def enforce_ml_policy(self, info: Info, trainjob: TrainJob) -> None:
        mpi = _policy(info)
        if mpi is None:
            return
        trainer = trainjob.spec.trainer
        as_node = bool(mpi.run_launcher_as_node)
        node_ps = info.pod_set(c.JOB_NODE)
        if trainer is not None and trainer.num_nodes is not None and node_ps is not None:
            node_ps.count = max(trainer.num_nodes - 1, 1) if as_node else trainer.num_nodes
        slots = num_proc_per_node(info, trainjob)
        mount_path = mpi.ssh_auth_mount_path or DEFAULT_SSH_AUTH_MOUNT_PATH
        for ps in info.pod_sets:
            if ps.name not in (c.JOB_NODE, c.JOB_LAUNCHER):
                continue
            volumes = ps.pod_spec.setdefault("volumes", [])
            upsert_by(volumes, "name", _ssh_volume(trainjob))
            if ps.name == c.JOB_LAUNCHER:
                upsert_by(volumes, "name", _hostfile_volume(trainjob))
            for ctr in ps.containers:
                if ctr.get("name") != c.CONTAINER_NODE:
                    continue
                mounts = ctr.setdefault("volumeMounts", [])
                upsert_by(mounts, "name", {"name": c.MPI_SSH_AUTH_VOLUME, "mountPath": mount_path})
                if ps.name != c.JOB_LAUNCHER:
                    continue
                upsert_by(
                    mounts, "name", {"name": c.MPI_HOSTFILE_VOLUME, "mountPath": c.MPI_HOSTFILE_DIR}
                )
                if _implementation(mpi) != c.MPI_IMPL_OPENMPI:
                    raise InvalidError([_unsupported(_implementation(mpi))])
                upsert_env(ctr.setdefault("env", []), *openmpi_envs(slots))
        if trainer is None:
            return
        for ps in info.pod_sets:
            trainer_job = ps.ancestor == c.ANCESTOR_TRAINER
            if not trainer_job and not (as_node and ps.name == c.JOB_NODE):
                continue
            node = ps.container(c.CONTAINER_NODE)
            if node is None:
                continue
            if not trainer_job:  # the trainer job got resourcesPerNode in build_info
                merge_resources(node, trainer)
            if trainer.env:
                upsert_env(node.setdefault("env", []), *(to_dict(e) for e in trainer.env))

    def build(self, info: Info, trainjob: TrainJob, options: Any) -> list[Obj]:
        mpi = _policy(info)
        if mpi is None:
            return []
        return [ssh_secret(trainjob, options), hostfile_configmap(info, trainjob)]


def ssh_secret(trainjob: TrainJob, options: Any) -> Obj:
    """The SSH key Secret; ``data`` is empty when the options carry no key pair."""
    data: dict[str, str] = {}
    private = getattr(options, "ssh_private_key", None)
    public = getattr(options, "ssh_public_key", None)
    if private is not None and public is not None:
        data[c.SSH_AUTH_PRIVATE_KEY] = base64.b64encode(private.encode()).decode()
        data[c.MPI_SSH_PUBLIC_KEY] = base64.b64encode(public.encode()).decode()
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": owned_meta(trainjob, secret_name(trainjob)),
        "immutable": True,
        "data": data,
        "type": c.SECRET_TYPE_SSH_AUTH,
    }


# The most a ConfigMap may hold (corev1.MaxSecretSize: "must have at most 1048576 bytes").
MAX_CONFIGMAP_BYTES = 1024 * 1024


def _hostfile_too_long(info: Info, trainjob: TrainJob, as_node: bool) -> InvalidError:
    trainer = trainjob.spec.trainer
    nodes = trainer.num_nodes if trainer is not None else None
    if nodes is None:
        nodes = sum(
            ps.count
            for ps in info.pod_sets
            if ps.name == c.JOB_NODE or (as_node and ps.name == c.JOB_LAUNCHER)
        )
    error = FieldError.invalid(
        "spec.trainer.numNodes",
        nodes,
        f"too many nodes for an MPI runtime: the hostfile ConfigMap {hostfile_name(trainjob)} "
        f"would be over the {MAX_CONFIGMAP_BYTES} bytes a ConfigMap may hold",
    )
    kind = f"{c.TRAINJOB_KIND}.{c.GROUP}"
    return InvalidError([error], kind, trainjob.metadata.name or "")


def hostfile_configmap(info: Info, trainjob: TrainJob) -> Obj:
    """The OpenMPI hostfile: one line per pod of ``node`` (and ``launcher`` as a node), in job order."""
    mpi = _policy(info)
    as_node = bool(mpi and mpi.run_launcher_as_node)
    slots = num_proc_per_node(info, trainjob)
    lines: list[str] = []
    size = 0
    for ps in info.pod_sets:
        if ps.name == c.JOB_NODE or (as_node and ps.name == c.JOB_LAUNCHER):
            for endpoint in ps.endpoints:
                lines.append(f"{endpoint} slots={slots}\n")
                size += len(lines[-1])
                if size > MAX_CONFIGMAP_BYTES:
                    raise _hostfile_too_long(info, trainjob, as_node)
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": owned_meta(trainjob, hostfile_name(trainjob)),
        "data": {c.MPI_HOSTFILE_NAME: "".join(lines)},
    }
