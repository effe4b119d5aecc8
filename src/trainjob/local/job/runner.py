"""How the local backend runs a pod: as processes here (the default) or as containers.

The supervisor plays the JobSet and Job controllers the same way whatever runs the pods:
dependsOn, restarts, backoff, success and failure policies, suspend, delete, probes, logs and
status are its own. A *pod runner* only knows how to turn a pod of the Plan into something that
runs here, and how to stop it: :class:`ProcessRunner` (each container a process in this
environment, endpoints and paths mapped onto this host; :mod:`trainjob.local.job.pods`) or
:class:`trainjob.local.job.containers.ContainerRunner` (each container a container of its image,
with the pod's own names, ports and mount paths, on a network of the job's own).

A job's runner is chosen when it is submitted and stored with it (the ``runner`` column of the
store: ``""`` for processes, else the container settings as JSON), so the supervisor and every
later verb, from any client, treat the job the way it was started. Called by the executor (a check
before submitting, clean-up after a dead supervisor or a delete) and by the supervisor.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Protocol

from trainjob.local.job import mpi, network, pods, ports
from trainjob.local.job.podrun import PodRun
from trainjob.runtime.plan import Plan

EventSink = Callable[[str, str, str, str, str], None]
"""``(type, reason, message, involved kind, involved name)``: an event for the job's store."""


def _no_events(_type: str, _reason: str, _message: str, _kind: str, _name: str) -> None:
    return None


class PodRunner(Protocol):
    """What the supervisor and the executor need from a way of running pods."""

    kind: str

    def check(
        self, plan: Plan, runtime: Mapping[str, object], home: Path, namespace: str, cwd: str
    ) -> list[str]:
        """Before submitting: what keeps the Plan's pods from running here (empty: nothing)."""
        ...

    def new_attempt(self, plan: Plan, templates: list[pods.PodTemplate]) -> None:
        """A (re)started JobSet: its pods get new endpoints (ports, addresses)."""
        ...

    def add_pods(self, plan: Plan, templates: list[pods.PodTemplate]) -> None:
        """Pods added to this attempt (an elastic job's scale up); PodConfigError when this
        runner cannot add any."""
        ...

    def build(
        self,
        pod: pods.PodTemplate,
        plan: Plan,
        volumes_root: Path,
        cwd: str,
        namespace: str,
        base_env: Mapping[str, str],
        kept: Mapping[str, Path] | None = None,
        extra_env: Mapping[str, str] | None = None,
    ) -> pods.LocalPod:
        """The pod, ready to start (a PodConfigError when it cannot run here). ``kept``: the
        volumes that outlive the job and their directories (trainjob.local.job.outputs);
        ``extra_env``: set in every container before its own env."""
        ...

    def start(self, pod: pods.LocalPod, log: Path, probe_pool: ThreadPoolExecutor) -> PodRun:
        """Start the pod (its first init container, or its containers), logging to ``log``."""
        ...

    def remove_pods(self, timeout: float) -> list[str]:
        """The pods were stopped (a suspend): remove what of them the runner keeps (stopped
        containers), within ``timeout`` seconds; what is still there (empty: nothing)."""
        ...

    def close(self, timeout: float) -> list[str]:
        """The job is over (or its supervisor exits): remove what the runner made for it and see
        it gone, within ``timeout`` seconds; what is still there, each with the command that
        removes it (empty: nothing). The supervisor writes the job's end only after this."""
        ...


class ProcessRunner:
    """Each container of a pod is a process of this machine's environment (the default)."""

    kind = "process"

    def __init__(self) -> None:
        self.network = pods.Network("", ())

    def check(
        self, plan: Plan, runtime: Mapping[str, object], home: Path, namespace: str, cwd: str
    ) -> list[str]:
        """Every command the Plan's pods run exists here (one pod per replicatedJob is built)."""
        plan = Plan(tuple(copy.deepcopy(list(plan.objects))))
        local_mpi = mpi.adapt(plan, dict(runtime))
        templates = pods.pod_templates(plan, "preflight")
        network = pods.network_for(plan, templates)
        problems: list[str] = []
        checked: set[str] = set()
        for t in templates:
            if (local_mpi and local_mpi.skips(t)) or t.job in checked:
                continue
            checked.add(t.job)
            try:
                pods.build_pod(t, network, plan, home / "preflight", cwd, namespace, os.environ)
            except pods.PodConfigError as e:
                problems.append(str(e))
        return problems

    def new_attempt(self, plan: Plan, templates: list[pods.PodTemplate]) -> None:
        self.network = pods.network_for(plan, templates, ports.free_port)

    def add_pods(self, plan: Plan, templates: list[pods.PodTemplate]) -> None:
        """Pods added to this attempt (an elastic job's scale up): endpoints for them."""
        self.network = network.extended(self.network, templates, ports.free_port)

    def build(
        self,
        pod: pods.PodTemplate,
        plan: Plan,
        volumes_root: Path,
        cwd: str,
        namespace: str,
        base_env: Mapping[str, str],
        kept: Mapping[str, Path] | None = None,
        extra_env: Mapping[str, str] | None = None,
    ) -> pods.LocalPod:
        return pods.build_pod(
            pod, self.network, plan, volumes_root, cwd, namespace, base_env, kept, extra_env
        )

    def start(self, pod: pods.LocalPod, log: Path, probe_pool: ThreadPoolExecutor) -> PodRun:
        run = PodRun(pod, log, probe_pool)
        run.start()
        return run

    def remove_pods(self, timeout: float) -> list[str]:
        return []  # a pod's processes are ended with it (trainjob.local.job.podrun.stop_all)

    def close(self, timeout: float) -> list[str]:
        return []  # nothing but processes, which the supervisor ends (trainjob.local.job.tracking)


def runner_for(
    spec: str, job: tuple[str, str, str] = ("", "", ""), events: EventSink = _no_events
) -> PodRunner:
    """The runner a job's stored ``runner`` column names; ``job`` is (namespace, name, uid)."""
    if not spec:
        return ProcessRunner()
    from trainjob.local.job.containers import ContainerRunner, ContainerSettings

    return ContainerRunner(ContainerSettings.from_json(spec), job, events)


def clean_up(spec: str, namespace: str, name: str, uid: str) -> list[str]:
    """Remove whatever a job's runner left behind (containers, networks) when its supervisor
    could not: it died, or was killed on delete; what is still there (empty: nothing). Nothing
    for processes: the executor ends their process groups itself."""
    if not spec:
        return []
    from trainjob.local.job.containers import ContainerSettings, clean_up_job

    return clean_up_job(ContainerSettings.from_json(spec), uid)
