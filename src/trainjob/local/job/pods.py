"""A Plan's pods as local processes: names, labels, env, endpoints, ports, paths and commands.

Pure functions (no processes started, no files written) used by the supervisor for each run of a
JobSet, and by the executor to check before submitting that every command can run here.
:func:`build_pod` puts together the parts, each in a module of its own, whose names this module
also exports (the names its callers import):

* :mod:`trainjob.local.job.templates`: the pods the JobSet and Job controllers would create, with
  their names, labels and annotations.
* :mod:`trainjob.local.job.network`: endpoints and ports mapped onto this host (``127.0.0.1``, a
  free port for each declared ``containerPort``).
* :mod:`trainjob.local.job.mounts`: volumes as directories, mount paths rewritten to them.
* :mod:`trainjob.local.job.container_env`: ``envFrom``, ``valueFrom`` and ``$(VAR)``.
* :mod:`trainjob.local.job.commands`: commands found on this machine (no images), trainjob's
  stand-ins, and what to install when one is missing.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path

from trainjob import threads
from trainjob.local.job import elastic, probes
from trainjob.local.job.commands import (
    ALWAYS,
    BUILTIN_IMAGES,
    INSTALL_HINTS,
    PYTHON_NAMES,
    STAND_INS,
    builtin_entrypoint,
    image_name,
    local_processes,
    missing_extras,
    resolve_command,
    script_launcher_missing,
    search_path,
    stand_in,
)
from trainjob.local.job.container_env import expand, resolve_env
from trainjob.local.job.mounts import mount_map, rewrite_paths, volume_dirs, volume_files
from trainjob.local.job.network import Network, network_for
from trainjob.local.job.templates import (
    LocalContainer,
    LocalPod,
    Obj,
    PodConfigError,
    PodTemplate,
    pod_templates,
    subdomain,
)
from trainjob.local.state import home as homes
from trainjob.runtime.plan import Plan

__all__ = [
    "ALWAYS",
    "BUILTIN_IMAGES",
    "INSTALL_HINTS",
    "PYTHON_NAMES",
    "STAND_INS",
    "LocalContainer",
    "LocalPod",
    "Network",
    "Obj",
    "PodConfigError",
    "PodTemplate",
    "build_pod",
    "builtin_entrypoint",
    "expand",
    "image_name",
    "local_processes",
    "missing_extras",
    "mount_map",
    "network_for",
    "pod_templates",
    "resolve_command",
    "resolve_env",
    "rewrite_paths",
    "script_launcher_missing",
    "search_path",
    "stand_in",
    "subdomain",
    "volume_dirs",
    "volume_files",
]


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
        elastic.rendezvous_env(full_env, pod.index)
        if threads.ENV not in full_env:  # this pod's share of the cores its siblings also use
            full_env[threads.ENV] = str(threads.share(local_processes(pod, objects, full_env)))
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
