"""A container's command as it runs on this machine: there are no images here.

A container's command runs in this machine's environment (``python`` is this interpreter).
Upstream's dataset and model initializer images, which have no command, run as trainjob's own
``python -m trainjob.initializers.dataset|model``; ``tune`` and ``trl`` have trainjob's stand-ins.
Any other container without a command, or a command not installed, is a :class:`PodConfigError`
that says what to install. Used through :mod:`trainjob.local.job.pods`.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import sys
from collections.abc import Mapping
from pathlib import Path

from trainjob import extras
from trainjob.initializers import sources
from trainjob.local.job.templates import Obj, PodConfigError, PodTemplate
from trainjob.runtime.plan import Plan

# What to install for commands a runtime commonly uses ({torch}, {llm}: this install with that
# extra, extras.install_target; hint() fills them in).
INSTALL_HINTS = {
    "mpirun": "install OpenMPI: apt-get install -y openmpi-bin libopenmpi-dev "
    "(or run scripts/setup-local.sh)",
    "mpiexec": "install OpenMPI: apt-get install -y openmpi-bin libopenmpi-dev "
    "(or run scripts/setup-local.sh)",
    "torchrun": "install PyTorch: pip install {torch} (or pip install torch)",
    "tune": "install trainjob's LLM trainer: pip install {llm} (or torchtune)",
    "deepspeed": "install DeepSpeed: pip install deepspeed",
    "accelerate": "install Accelerate: pip install accelerate",
    "sshd": "install OpenSSH server: apt-get install -y openssh-server",
}


def hint(exe: str, default: str = "install it, or put it on PATH") -> str:
    """What to install for the missing command ``exe`` (:data:`INSTALL_HINTS`)."""
    text = INSTALL_HINTS.get(exe)
    if text is None:
        return default
    return text.format(torch=extras.install_target(["torch"]), llm=extras.install_target(["llm"]))


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
        modules = sources.MODULES.get(sources.scheme(uri), ())
        return extras.message(f"STORAGE_URI {uri!r}", modules)
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
    return f"command {words[0]!r} not found: {hint(words[0])}"


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
        raise PodConfigError(f"{where}: command {exe!r} not found: {hint(exe)}")
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
