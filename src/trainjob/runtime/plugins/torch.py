"""Torch: torchrun's ``PET_*`` environment for the trainer (upstream ``plugins/torch``).

Pod count from ``trainer.numNodes``; ``PET_NPROC_PER_NODE`` from ``trainer.numProcPerNode`` or
derived from the node's resources (``auto`` without GPUs means one process per CPU); the master
address is the first trainer pod's stable DNS name. A ``tune run`` command is left to
:mod:`trainjob.runtime.plugins.torchtune`, which rewrites it instead of setting master envs.
"""

from __future__ import annotations

from trainjob.api import constants as c
from trainjob.api.base import to_dict
from trainjob.api.trainer import TrainJob
from trainjob.errors import FieldError
from trainjob.runtime import quantity
from trainjob.runtime.info import Info, Obj, container_resources, upsert_by, upsert_env

NAME = "Torch"

TORCHTUNE_ENTRYPOINT = ["tune", "run"]
LEGACY_NUM_PROC_VALUES = ("auto", "cpu", "gpu")


def is_torchtune(trainjob: TrainJob) -> bool:
    trainer = trainjob.spec.trainer
    return trainer is not None and trainer.command == TORCHTUNE_ENTRYPOINT


def _cpu_count(resources: Obj | None) -> int | None:
    """CPUs of a ResourceList (rounded up), None when no CPU is named."""
    if not resources or "cpu" not in resources:
        return None
    try:
        return quantity.ceil_int(resources["cpu"])
    except quantity.QuantityError:
        return None


def _has_gpu(resources: Obj | None) -> bool:
    return any("gpu" in name.lower() for name in (resources or {}))


def num_proc_per_node(info: Info, trainjob: TrainJob) -> int | str:
    """The value of ``PET_NPROC_PER_NODE`` (an int, or "auto"/"gpu" passed to torchrun)."""
    trainer = trainjob.spec.trainer
    torch_policy = info.ml_policy.torch if info.ml_policy else None
    value: int | str = "auto"
    if torch_policy is not None and torch_policy.num_proc_per_node is not None:
        value = torch_policy.num_proc_per_node
    if trainer is not None and trainer.num_proc_per_node is not None:
        value = trainer.num_proc_per_node
    if isinstance(value, str) and value.isdigit():
        value = int(value)
    if value not in ("auto", "cpu"):
        return value
    if trainer is not None and trainer.resources_per_node is not None:
        resources = to_dict(trainer.resources_per_node)
    else:
        resources = container_resources(info.trainer_container())
    limits, requests = resources.get("limits"), resources.get("requests")
    for rl in (limits, requests):
        if not rl:
            continue
        use_cpu = not _has_gpu(rl) if value == "auto" else "cpu" in rl
        if use_cpu:
            return max(1, _cpu_count(rl) or 0)
        if value == "auto":
            return "auto"
    return 1


class Torch:
    name = NAME

    def validate(self, info: Info | None, old: TrainJob | None, new: TrainJob) -> list[FieldError]:
        errors: list[FieldError] = []
        if info is None or info.ml_policy is None or info.ml_policy.torch is None:
            return errors
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
        if not is_torchtune(new):
            reserved = sorted(
                {e.name for e in trainer.env or () if e.name in c.TORCH_RESERVED_ENVS}
            )
            if reserved:
                errors.append(
                    FieldError.invalid(
                        "spec.trainer.env",
                        [to_dict(e) for e in trainer.env or ()],
                        f"must not have reserved envs, invalid envs configured: [{' '.join(reserved)}]",
                    )
                )
        return errors

    def enforce_ml_policy(self, info: Info, trainjob: TrainJob) -> None:
        if info.ml_policy is None or info.ml_policy.torch is None:
            return
        trainer = trainjob.spec.trainer
        ps = info.pod_set_by_ancestor(c.ANCESTOR_TRAINER)
        if ps is not None and trainer is not None and trainer.num_nodes is not None:
            ps.count = trainer.num_nodes
        npp = num_proc_per_node(info, trainjob)
        node = ps.container(c.CONTAINER_NODE) if ps is not None else None
        if node is None:
            return
        env: list[Obj] = node.setdefault("env", [])
        if trainer is not None and trainer.env:
            upsert_env(env, *(to_dict(e) for e in trainer.env))
        count = ps.count if ps is not None else 1
        name = trainjob.metadata.name or ""
        if not is_torchtune(trainjob):
            upsert_env(env, *pet_envs(name, count, npp, master=True))
        else:
            upsert_env(env, *pet_envs(name, count, npp, master=False))
        upsert_by(
            node.setdefault("ports", []),
            "containerPort",
            {"containerPort": c.CONTAINER_TRAINER_PORT},
        )
        self._inject(info, trainjob, count, npp)

    def _inject(self, info: Info, trainjob: TrainJob, count: int, npp: int | str) -> None:
        """v2.3 ``torch.envInjection``: the same PET_* envs into other listed containers."""
        torch_policy = info.ml_policy.torch if info.ml_policy else None
        if torch_policy is None or torch_policy.env_injection is None:
            return
        from trainjob.errors import InvalidError

        envs = pet_envs(trainjob.metadata.name or "", count, npp, master=True)
        for target in torch_policy.env_injection.targets or ():
            ps = info.pod_set(target.job_name)
            for cname in target.container_names:
                ctr = ps.any_container(cname) if ps is not None else None
                if ctr is None:
                    raise InvalidError(
                        [
                            FieldError.invalid(
                                "spec.mlPolicy.torch.envInjection.targets",
                                target.job_name,
                                f"envInjection target podSet {target.job_name!r} container "
                                f"{cname!r} not found in runtime template".replace("'", '"'),
                            )
                        ]
                    )
                upsert_env(ctr.setdefault("env", []), *(dict(e) for e in envs))


def pet_envs(name: str, count: int, npp: int | str, *, master: bool) -> list[Obj]:
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
