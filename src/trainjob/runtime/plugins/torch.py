"""Torch: torchrun's ``PET_*`` environment for the trainer (upstream ``plugins/torch``).

Pod count from ``trainer.numNodes``. ``PET_NPROC_PER_NODE`` from ``trainer.numProcPerNode``, else
the v2.0/v2.1 ``torch.numProcPerNode``, else ``auto``; ``cpu``, or ``auto`` on a node without GPUs,
becomes the node's CPU count (requests, else limits, rounded up; at least 1), read from
``trainer.resourcesPerNode`` when set, else from the runtime's ``node`` container. Env order on
container ``node``: ``trainer.env`` first, then the ``PET_*`` envs (so they win), and port 29500;
both only when the TrainJob has ``spec.trainer``, as upstream's ``torch.go`` does. The master
address is the first trainer pod's stable DNS name. A trainer command of ``tune run`` gets no
master envs; :mod:`trainjob.runtime.plugins.torchtune` rewrites the command instead.
v2.3 ``torch.envInjection`` copies every ``PET_*`` env into other listed containers; a target
container the runtime lacks is a field error at admission (upstream's text, on ``spec.runtimeRef``).
"""

from __future__ import annotations

from trainjob.api import constants as c
from trainjob.api import quantity
from trainjob.api.base import to_dict
from trainjob.api.trainer import TrainJob
from trainjob.errors import FieldError, InvalidError
from trainjob.runtime.info import Info, Obj, container_resources, num_gpus, upsert_by, upsert_env
from trainjob.runtime.plugins import torch_elastic, torchtune
from trainjob.runtime.plugins.trainer import reserved_envs_error

NAME = "Torch"

LEGACY_NUM_PROC_VALUES = ("auto", "cpu", "gpu")


def is_torchtune(trainjob: TrainJob) -> bool:
    trainer = trainjob.spec.trainer
    return trainer is not None and torchtune.is_torchtune(trainer.command)


def _cpu(resources: Obj | None) -> int:
    """CPUs of a ResourceList rounded up (Go ``Quantity.Value()``); 0 when none or malformed."""
    value = (resources or {}).get("cpu")
    if value is None:
        return 0
    try:
        return quantity.ceil_int(value)
    except quantity.QuantityError:
        return 0


def num_cpus(resources: Obj) -> int:
    """CPUs per node (upstream ``getNumCPUPerNode``): requests, else limits when requests are 0."""
    requested = _cpu(resources.get("requests"))
    return requested if requested > 0 else _cpu(resources.get("limits"))


def resources_per_node(info: Info, trainjob: TrainJob) -> Obj:
    """``trainer.resourcesPerNode`` when set, else the runtime's trainer ``node`` container's."""
    trainer = trainjob.spec.trainer
    if trainer is not None and trainer.resources_per_node is not None:
        return to_dict(trainer.resources_per_node)
    return container_resources(info.trainer_container())


def requested_num_proc_per_node(info: Info, trainjob: TrainJob) -> int | str:
    """``trainer.numProcPerNode`` ?? v2.0/2.1 ``torch.numProcPerNode`` ?? ``auto`` (digits -> int)."""
    trainer = trainjob.spec.trainer
    torch_policy = info.ml_policy.torch if info.ml_policy else None
    value: int | str = "auto"
    if torch_policy is not None and torch_policy.num_proc_per_node is not None:
        value = torch_policy.num_proc_per_node
    if trainer is not None and trainer.num_proc_per_node is not None:
        value = trainer.num_proc_per_node
    if isinstance(value, str) and value.isdigit():
        value = int(value)
    return value


def num_proc_per_node(info: Info, trainjob: TrainJob) -> int | str:
    """The value of ``PET_NPROC_PER_NODE``: an int, or ``auto``/``gpu`` left to torchrun."""
    value = requested_num_proc_per_node(info, trainjob)
    resources = resources_per_node(info, trainjob)
    if value == "cpu" or (value == "auto" and num_gpus(resources) == 0):
        return max(1, num_cpus(resources))
    return value


def pet_envs(name: str, count: int, npp: int | str, *, master: bool) -> list[Obj]:
    """``PET_NNODES``, ``PET_NPROC_PER_NODE``, ``PET_NODE_RANK`` and, with ``master``, the master envs."""
    envs: list[Obj] = [
        {"name": c.TORCH_ENV_NUM_NODES, "value": str(count)},
        {"name": c.TORCH_ENV_NUM_PROC_PER_NODE, "value": str(npp)},
        {
            "name": c.TORCH_ENV_NODE_RANK,
            "valueFrom": {"fieldRef": {"fieldPath": c.JOB_COMPLETION_INDEX_FIELD}},
        },
    ]
    if master:
        envs.append({"name": c.TORCH_ENV_MASTER_ADDR, "value": f"{name}-{c.JOB_NODE}-0-0.{name}"})
        envs.append({"name": c.TORCH_ENV_MASTER_PORT, "value": str(c.CONTAINER_TRAINER_PORT)})
    return envs


class Torch:
    name = NAME

    def validate(self, info: Info | None, old: TrainJob | None, new: TrainJob) -> list[FieldError]:
        errors: list[FieldError] = []
        if info is None or info.ml_policy is None or info.ml_policy.torch is None:
            not_torch = torch_elastic.not_torch_error(new) if info is not None else None
            return [not_torch] if not_torch is not None else errors
        errors.extend(_env_injection_errors(info))
        errors.extend(torch_elastic.validate(info, new))
        trainer = new.spec.trainer
        if trainer is None:
            return errors
        npp = trainer.num_proc_per_node
        if isinstance(npp, str) and not npp.isdigit() and npp not in LEGACY_NUM_PROC_VALUES:
            errors.append(
                FieldError.invalid(
                    "spec.trainer.numProcPerNode", npp, "must have an int value or [auto cpu gpu]"
                )
            )
        reserved = reserved_envs_error(trainer, c.TORCH_RESERVED_ENVS)
        if reserved is not None:
            errors.append(reserved)
        if is_torchtune(new):
            errors.extend(torchtune.validate(new, num_gpus(resources_per_node(info, new))))
            if (tune_error := torch_elastic.torchtune_error(info, new)) is not None:
                errors.append(tune_error)
        return errors

    def enforce_ml_policy(self, info: Info, trainjob: TrainJob) -> None:
        if info.ml_policy is None or info.ml_policy.torch is None:
            return
        trainer = trainjob.spec.trainer
        ps = info.pod_set_by_ancestor(c.ANCESTOR_TRAINER)
        if ps is not None and trainer is not None and trainer.num_nodes is not None:
            ps.count = trainer.num_nodes
        elastic = torch_elastic.effective(info, trainjob)
        if ps is not None and elastic is not None:
            ps.count = torch_elastic.start_nodes(elastic, trainjob)
        count = ps.count if ps is not None else 1
        npp = num_proc_per_node(info, trainjob)
        name = trainjob.metadata.name or ""
        # Upstream torch.go: the trainer's node container gets env and port only when the
        # TrainJob has spec.trainer (envInjection targets get them either way).
        node = ps.container(c.CONTAINER_NODE) if ps is not None and trainer is not None else None
        if node is not None:
            env: list[Obj] = node.setdefault("env", [])
            if trainer is not None and trainer.env:
                upsert_env(env, *(to_dict(e) for e in trainer.env))
            tune = is_torchtune(trainjob)
            upsert_env(env, *pet_envs(name, count, npp, master=not tune))
            if elastic is not None and not tune:
                upsert_env(env, *torch_elastic.pet_envs(trainjob, elastic))
            if tune and trainer is not None and ps is not None:
                node["command"] = torchtune.command(
                    trainjob_name=name,
                    runtime_ref_name=trainjob.spec.runtime_ref.name,
                    num_nodes=count,
                    num_proc_per_node=npp,
                    gpus=num_gpus(resources_per_node(info, trainjob)),
                    args=trainer.args,
                    runtime_command=ps.runtime_command,
                )
            upsert_by(
                node.setdefault("ports", []),
                "containerPort",
                {"containerPort": c.CONTAINER_TRAINER_PORT},
            )
        _inject(info, name, count, npp)


def _env_injection_errors(info: Info) -> list[FieldError]:
    """Upstream ``validateEnvInjectionTargets``: every target container must exist (checked at
    admission, on ``spec.runtimeRef`` as upstream does, so a TrainJob is refused at once instead
    of failing every reconcile)."""
    torch_policy = info.ml_policy.torch if info.ml_policy else None
    if torch_policy is None or torch_policy.env_injection is None:
        return []
    errors = []
    for target in torch_policy.env_injection.targets or ():
        ps = info.pod_set(target.job_name)
        for cname in target.container_names:
            if ps is None or ps.any_container(cname) is None:
                errors.append(
                    FieldError.invalid(
                        "spec.runtimeRef",
                        target,
                        f'envInjection target podSet "{target.job_name}" container "{cname}" '
                        "not found in runtime template",
                    )
                )
    return errors


def _inject(info: Info, name: str, count: int, npp: int | str) -> None:
    """v2.3 ``torch.envInjection``: every ``PET_*`` env into the listed (init) containers."""
    torch_policy = info.ml_policy.torch if info.ml_policy else None
    if torch_policy is None or torch_policy.env_injection is None:
        return
    for i, target in enumerate(torch_policy.env_injection.targets or ()):
        ps = info.pod_set(target.job_name)
        for j, cname in enumerate(target.container_names):
            ctr = ps.any_container(cname) if ps is not None else None
            if ctr is None:
                raise InvalidError(
                    [
                        FieldError.invalid(
                            f"spec.mlPolicy.torch.envInjection.targets[{i}].containerNames[{j}]",
                            cname,
                            f'envInjection target podSet "{target.job_name}" container "{cname}" '
                            "not found in runtime template",
                        )
                    ]
                )
            upsert_env(ctr.setdefault("env", []), *pet_envs(name, count, npp, master=True))
