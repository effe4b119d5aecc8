"""TrainingRuntime / ClusterTrainingRuntime objects -> the SDK's ``Runtime``, and device helpers.

Works on the dict form of the objects (what the apiserver returns, or a model's ``to_dict()``),
so both backends share it. The trainer's entrypoint is chosen as upstream's SDK does: ``tune
run`` for the torchtune framework, ``torchrun`` for ``mlPolicy.torch``, ``mpirun`` for
``mlPolicy.mpi``, else ``python``.
"""

from __future__ import annotations

from typing import Any

from trainjob.client import constants as c
from trainjob.client import types

# The script a CustomTrainer's function runs with. ``{func_code}`` and ``{func_file}`` are
# replaced by shell-quoted values (see ``client.builder``); ``__ENTRYPOINT__`` by the launcher.
# Unlike upstream's unquoted heredoc, nothing in the code is expanded by the shell.
EXEC_FUNC_SCRIPT = (
    'SCRIPT_DIR="$(mktemp -d 2>/dev/null || pwd)"\n'
    'printf "%s" {func_code} > "$SCRIPT_DIR"/{func_file}\n'
    '__ENTRYPOINT__ "$SCRIPT_DIR"/{func_file}'
)
DEFAULT_COMMAND = ("bash", "-c", EXEC_FUNC_SCRIPT.replace("__ENTRYPOINT__", "python"))
TORCH_COMMAND = ("bash", "-c", EXEC_FUNC_SCRIPT.replace("__ENTRYPOINT__", "torchrun"))
MPI_COMMAND = ("mpirun", "--hostfile", c.MPI_HOSTFILE, *DEFAULT_COMMAND)


def container_devices(resources: dict[str, Any] | None) -> tuple[str, str] | None:
    """(device, count) from a container's resource limits, or None without limits."""
    limits = (resources or {}).get("limits")
    if not limits:
        return None
    if c.GPU_LABEL in limits:
        return "gpu", str(limits[c.GPU_LABEL])
    if c.TPU_LABEL in limits:
        return "tpu", str(limits[c.TPU_LABEL])
    mig = [k for k in limits if k.startswith(c.GPU_MIG_PREFIX)]
    if len(mig) > 1:
        raise ValueError(f"Multiple MIG resource types are not supported yet: {mig}")
    if mig:
        return mig[0].split("/", 1)[1], str(limits[mig[0]])
    if c.NPU_LABEL in limits:
        return "npu", str(limits[c.NPU_LABEL])
    if c.CPU_LABEL in limits:
        return c.CPU_LABEL, str(limits[c.CPU_LABEL])
    return None


def resources_per_node(resources: dict[str, Any]) -> dict[str, Any]:
    """``{"gpu": 1, "cpu": 2}`` -> ResourceRequirements with the same requests and limits.

    Standard keys are lower-cased; ``gpu`` means ``nvidia.com/gpu``, ``storage`` means
    ``ephemeral-storage``, ``mig-<profile>`` means ``nvidia.com/mig-<profile>``.
    """
    standard = {"cpu", "memory", "gpu", "storage", "ephemeral-storage"}
    aliases = {"gpu": c.GPU_LABEL, "storage": "ephemeral-storage"}
    out: dict[str, Any] = {}
    for key, value in resources.items():
        low = str(key).lower()
        name = low if low in standard or low.startswith("mig-") else str(key)
        name = aliases.get(name, name)
        if name.startswith("mig-"):
            name = c.GPU_MIG_PREFIX + name[len("mig-") :]
        if not isinstance(value, str | int | float) or isinstance(value, bool):
            raise ValueError(f"resources_per_node[{key!r}] must be a number or a quantity string")
        # A bare decimal is refused by the apiserver (integer or string): send "0.5", not 0.5.
        out[name] = format(value, "g") if isinstance(value, float) else value
    mig = [k for k in out if k.startswith(c.GPU_MIG_PREFIX)]
    if len(mig) > 1:
        raise ValueError(f"Multiple MIG resource types are not supported: {mig}")
    if mig and c.GPU_LABEL in out:
        raise ValueError(f"GPU ({c.GPU_LABEL}) and MIG ({mig[0]}) cannot be requested together")
    return {"limits": dict(out), "requests": dict(out)}


def trainer_container(replicated_jobs: list[dict[str, Any]]) -> dict[str, Any] | None:
    """Container ``node`` of the replicatedJob labelled as a trainjob ancestor step."""
    for rjob in replicated_jobs:
        tmpl = rjob.get("template") or {}
        labels = (tmpl.get("metadata") or {}).get("labels") or {}
        if c.TRAINJOB_ANCESTOR_LABEL not in labels:
            continue
        pod = ((tmpl.get("spec") or {}).get("template") or {}).get("spec") or {}
        for ctr in pod.get("containers") or ():
            if ctr.get("name") == c.NODE:
                return dict(ctr)
    return None


def runtime_from_cr(obj: dict[str, Any]) -> types.Runtime:
    """A runtime object -> ``Runtime``; ValueError when it lacks what the SDK needs."""
    kind = obj.get("kind") or c.CLUSTER_TRAINING_RUNTIME_KIND
    meta = obj.get("metadata") or {}
    name = meta.get("name") or ""
    spec = obj.get("spec") or {}
    rjobs = ((spec.get("template") or {}).get("spec") or {}).get("replicatedJobs") or []
    if not name or not rjobs:
        raise ValueError(
            f"{kind} '{name}' is invalid — missing one or more required fields: "
            "metadata.name, spec.template.spec.replicatedJobs."
        )
    framework = (meta.get("labels") or {}).get(c.RUNTIME_FRAMEWORK_LABEL)
    if not framework:
        raise ValueError(f"Runtime {name} must have {c.RUNTIME_FRAMEWORK_LABEL} label")
    policy = spec.get("mlPolicy") or {}
    ctr = trainer_container(rjobs)
    if not ctr or not ctr.get("image"):
        raise ValueError(f"Runtime {name} doesn't have a trainer container (container 'node')")
    trainer = types.RuntimeTrainer(
        trainer_type=(
            types.TrainerType.BUILTIN_TRAINER
            if framework in (c.TORCH_TUNE, c.TRL)
            else types.TrainerType.CUSTOM_TRAINER
        ),
        framework=framework,
        image=ctr["image"],
    )
    devices = container_devices(ctr.get("resources"))
    if devices:
        trainer.device, trainer.device_count = devices
    mpi = policy.get("mpi")
    if isinstance(mpi, dict) and mpi.get("numProcPerNode"):
        trainer.device_count = str(mpi["numProcPerNode"])
    num_nodes = policy.get("numNodes")
    if isinstance(num_nodes, int) and num_nodes > 0:
        if trainer.device_count.isdigit():
            trainer.device_count = str(int(trainer.device_count) * num_nodes)
        trainer.num_nodes = num_nodes
    if framework == c.TORCH_TUNE:
        trainer.set_command(c.TORCH_TUNE_COMMAND)
    elif framework == c.TRL:
        # trainjob's `trl`, or KEP-2839's `torchrun -m trl.scripts.sft`: the runtime's own
        command = ctr.get("command")
        if isinstance(command, list) and command and all(isinstance(x, str) for x in command):
            trainer.set_command(tuple(command))
        else:
            trainer.set_command(c.TRL_COMMAND)
    elif policy.get("torch") is not None:
        trainer.set_command(TORCH_COMMAND)
    elif policy.get("mpi") is not None:
        trainer.set_command(MPI_COMMAND)
    else:
        trainer.set_command(DEFAULT_COMMAND)
    return types.Runtime(
        name=name,
        trainer=trainer,
        kind=types.RuntimeKind(kind)
        if kind in {k.value for k in types.RuntimeKind}
        else types.RuntimeKind.CLUSTER_TRAINING_RUNTIME,
    )
