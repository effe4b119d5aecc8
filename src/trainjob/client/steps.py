"""The SDK's steps of a TrainJob: upstream's names over the job model's pods.

``dataset-initializer``, ``model-initializer`` and ``node-N``; for MPI the launcher is ``node-0``
and the workers ``node-1..``. Each step's device and count come, first found, from the pod's
container resources (a cluster's pod spec), the TrainJob's ``resourcesPerNode``, then the runtime;
``PET_NPROC_PER_NODE`` of the pod's container gives the count when it is a number (as upstream's
SDK reads them). One rule for every backend (:mod:`trainjob.client.backends.adapter`).
"""

from __future__ import annotations

import re

from trainjob.client import constants as c
from trainjob.client import runtimes, types
from trainjob.executor.model import JobState, PodState

NODE_STEP = re.compile(r"^node-(\d+)$")
_ORDER = {c.DATASET_INITIALIZER: 0, c.MODEL_INITIALIZER: 1}


def is_mpi(state: JobState, rt: types.Runtime | None) -> bool:
    """Whether ``node-0`` is an MPI launcher: the job has a launcher pod, or (no pods yet) its
    runtime runs ``mpirun``."""
    if state.pods:
        return any(p.job == c.LAUNCHER for p in state.pods)
    command = rt.trainer.command if rt else ()
    return bool(command) and command[0] == "mpirun"


def step_of(pod: PodState, mpi: bool) -> str | None:
    """The step name of a pod; None for a pod that is no step (another replicatedJob)."""
    if pod.job in (c.DATASET_INITIALIZER, c.MODEL_INITIALIZER):
        return pod.job
    if pod.job == c.LAUNCHER:
        return f"{c.NODE}-0"
    if pod.job == c.NODE:
        return f"{c.NODE}-{pod.index + 1 if mpi else pod.index}"
    return None


def pod_of(step: str, mpi: bool) -> tuple[str, int]:
    """(replicatedJob, index) of the pod behind ``step``."""
    m = NODE_STEP.match(step)
    if not m:
        return step, 0
    index = int(m.group(1))
    if mpi:
        return (c.LAUNCHER, 0) if index == 0 else (c.NODE, index - 1)
    return c.NODE, index


def steps(state: JobState, rt: types.Runtime | None = None) -> list[types.Step]:
    """The job's steps in upstream's order: initializers, then ``node-0..``."""
    mpi = is_mpi(state, rt)
    trainer = state.spec.get("trainer") or {}
    from_spec = runtimes.container_devices(trainer.get("resourcesPerNode"))
    keyed: list[tuple[int, int, types.Step]] = []
    for pod in state.pods:
        name = step_of(pod, mpi)
        if name is None:
            continue
        step = types.Step(name, pod.phase, pod.name)
        node = name.startswith(c.NODE)
        device = _devices(pod, from_spec if node else None, rt if node else None)
        if device:
            step.device, step.device_count = device
        m = NODE_STEP.match(name)
        keyed.append((_ORDER.get(name, 2), int(m.group(1)) if m else -1, step))
    keyed.sort(key=lambda k: (k[0], k[1]))
    return [k[2] for k in keyed]


def _devices(
    pod: PodState, from_spec: tuple[str, str] | None, rt: types.Runtime | None
) -> tuple[str, str] | None:
    device = runtimes.container_devices(dict(pod.resources)) or from_spec
    if device is None and rt is not None and rt.trainer.device != c.UNKNOWN:
        device = (rt.trainer.device, c.UNKNOWN)
    nproc = pod.env.get(c.TORCH_ENV_NUM_PROC_PER_NODE, "")
    if nproc.isdigit():
        device = (device[0] if device else c.UNKNOWN, nproc)
    return device


def known(state: JobState, rt: types.Runtime | None = None) -> str:
    """The job's step names, for an error message."""
    return ", ".join(s.name for s in steps(state, rt))
