"""What of a local job outlives it: the volumes that are storage, not scratch.

On a cluster, the PVCs that a JobSet's ``volumeClaimPolicies`` create stay when the JobSet is
deleted (``retentionPolicy.whenDeleted`` defaults to Retain), and a ``persistentVolumeClaim``
volume names a claim no job owns; an ``emptyDir`` dies with its pod. The local backend keeps the
same split, so what a fine-tune writes to the torchtune runtimes' ``/workspace`` (the LLM
trainer's ``output_dir``, its checkpoints, the initializers' downloads) is not lost with the job:

* a ``volumeClaimPolicies`` volume is ``$TRAINJOB_HOME/outputs/NS/NAME/RUN/VOLUME`` (one
  directory per run, so a replaced job's outputs stay beside the new run's; a policy with
  ``targetReplicatedJobs`` gets one per pod, ``VOLUME-JOB-JOBINDEX-INDEX``, as JobSet makes one
  PVC per pod), unless its ``whenDeleted`` is Delete;
* a ``persistentVolumeClaim`` volume is ``$TRAINJOB_HOME/claims/NS/CLAIM``, shared by every job
  that names the claim;
* everything else stays under the job's scratch directory, removed with it.

Every container also gets ``$TRAINJOB_CHECKPOINT_DIR`` (``RUN/checkpoints``, kept as the volumes
are) and ``$TRAINJOB_RESTART_ATTEMPT``, so custom training code resumes after a JobSet restart.

Used by the supervisor (where to mount) and the executor (``outputs()``, ``delete --purge``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from trainjob.errors import ConfigError
from trainjob.executor.model import Output
from trainjob.local.job import pods
from trainjob.local.state import home as homes
from trainjob.runtime.plan import Plan

OUTPUT_DIR = "output_dir"
CHECKPOINTS = "checkpoints"
# ``output_dir=/x`` (torchtune's and trainjob's LLM trainer's key=value), ``--output_dir /x``,
# ``--output-dir=/x`` (transformers' and most training scripts' flags).
_OUTPUT_ARG = re.compile(r"^(?:--)?output[_-]dir(?:=(?P<value>.+))?$")


@dataclass(frozen=True)
class Kept:
    """The kept volumes of one run: ``shared`` ones (every replicatedJob mounts the same
    directory), ``targeted`` ones (claim name -> the replicatedJobs with a directory per pod)."""

    run_dir: Path
    claims_dir: Path
    shared: frozenset[str] = frozenset()
    targeted: Mapping[str, frozenset[str]] = field(default_factory=dict)

    @property
    def checkpoint_dir(self) -> Path:
        """``$TRAINJOB_CHECKPOINT_DIR``: where custom training code saves what a restarted
        attempt resumes from (a kept volume named ``checkpoints`` is the same directory)."""
        return self.run_dir / CHECKPOINTS

    def env(self, restart_attempt: int) -> dict[str, str]:
        """The variables every container of an attempt gets: the checkpoint directory and the
        restart attempt (0, then 1 after the first JobSet restart, ...)."""
        return {
            homes.ENV_CHECKPOINT_DIR: str(self.checkpoint_dir),
            homes.ENV_RESTART_ATTEMPT: str(restart_attempt),
        }

    def drop_empty(self) -> None:
        """At the job's end: remove the checkpoint directory, and then the run's and the job's
        output directories, where nothing was written to them (each made for a pod that might
        write; a job that wrote nothing leaves no empty folders). Never removes content."""
        for d in (self.checkpoint_dir, self.run_dir, self.run_dir.parent):
            try:
                d.rmdir()  # only an empty directory; a link or a file is refused
            except OSError:
                return

    def dirs(self, pod: pods.PodTemplate) -> dict[str, Path]:
        """Volume name -> directory, for the kept volumes ``pod`` may mount."""
        out = {name: self.run_dir / name for name in self.shared}
        for name, jobs in self.targeted.items():
            if pod.job in jobs:
                out[name] = self.run_dir / f"{name}-{pod.job}-{pod.job_index}-{pod.index}"
        for volume in pod.spec.get("volumes") or ():
            claim = (volume.get("persistentVolumeClaim") or {}).get("claimName")
            if claim:
                try:
                    out[volume["name"]] = self.claims_dir / homes.component(str(claim), "claim")
                except ConfigError as e:
                    raise pods.PodConfigError(f'volume "{volume["name"]}": {e}') from None
        return out


def kept(plan: Plan, home: Path, namespace: str, name: str, created: str, uid: str) -> Kept:
    """Where the run ``uid`` (created at ``created``) of job ``name`` keeps its outputs."""
    spec = plan.jobset.get("spec") or {}
    shared: set[str] = set()
    targeted: dict[str, frozenset[str]] = {}
    for policy in spec.get("volumeClaimPolicies") or ():
        if (policy.get("retentionPolicy") or {}).get("whenDeleted") == "Delete":
            continue  # JobSet deletes these PVCs with the JobSet: scratch
        targets = frozenset(policy.get("targetReplicatedJobs") or ())
        for template in policy.get("templates") or ():
            claim = (template.get("metadata") or {}).get("name")
            if not claim:
                continue
            if targets:
                targeted[str(claim)] = targets
            else:
                shared.add(str(claim))
    return Kept(
        run_dir=homes.run_outputs_dir(home, namespace, name, created, uid),
        claims_dir=homes.claims_dir(home, namespace),
        shared=frozenset(shared),
        targeted=targeted,
    )


def _output_dirs(ctr: Mapping[str, object]) -> list[str]:
    """The values of a container's ``output_dir`` arguments (see ``_OUTPUT_ARG``)."""
    argv = [str(a) for a in [*(ctr.get("command") or ()), *(ctr.get("args") or ())]]  # type: ignore[misc]
    found: list[str] = []
    for i, arg in enumerate(argv):
        m = _OUTPUT_ARG.match(arg)
        if not m:
            continue
        value = m.group("value")
        if value is None and arg.startswith("--") and i + 1 < len(argv):
            value = argv[i + 1]
        if value:
            found.append(value)
    return found


def describe(plan: Plan, keep: Kept, uid: str) -> list[Output]:
    """The outputs of a run, the trainers' ``output_dir`` first (when on a kept volume), then
    each kept volume with the mount paths and steps that use it."""
    dirs_used: dict[Path, tuple[str, set[str], set[str]]] = {}
    output_dirs: dict[str, set[str]] = {}
    for t in pods.pod_templates(plan, uid):
        dirs = keep.dirs(t)
        if not dirs:
            continue
        for ctr in [*(t.spec.get("initContainers") or ()), *(t.spec.get("containers") or ())]:
            for m in ctr.get("volumeMounts") or ():
                where = dirs.get(m.get("name"))
                if where is None:
                    continue
                entry = dirs_used.setdefault(where, (m["name"], set(), set()))
                entry[1].add(str(m.get("mountPath")))
                entry[2].add(t.job)
            mounts = pods.mount_map(ctr, dirs)
            for value in _output_dirs(ctr):
                local = pods.rewrite_paths(value, mounts)
                if local != value:
                    output_dirs.setdefault(local, set()).add(t.job)
    out = [
        Output(OUTPUT_DIR, local, f"output_dir of {', '.join(sorted(jobs))}")
        for local, jobs in sorted(output_dirs.items())
    ]
    ckpt = keep.checkpoint_dir
    if ckpt not in dirs_used and ckpt.is_dir() and any(ckpt.iterdir()):
        out.append(Output(CHECKPOINTS, str(ckpt), f"${homes.ENV_CHECKPOINT_DIR} of the pods"))
    for where, (volume, mount_paths, jobs) in sorted(dirs_used.items()):
        what = "claim" if where.is_relative_to(keep.claims_dir) else "volume"
        out.append(
            Output(
                volume,
                str(where),
                f"{what} {volume}: {', '.join(sorted(mount_paths))} of {', '.join(sorted(jobs))}",
            )
        )
    return out
