"""``ContainerRunner``: the local backend's pods as containers of their images.

A pod runner (:mod:`trainjob.local.job.runner`): the supervisor decides when pods start and stop,
this module makes each one a set of containers and cleans up after them.

* The job gets a bridge network of its own (``trainjob-<uid>``), made with the first attempt and
  removed (and seen gone) before the job's end is written. Each pod has a fixed address on it
  and its hostname; every container resolves every pod's DNS names
  ``<hostname>.<subdomain>[.<ns>.svc[.cluster.local]]`` through its /etc/hosts (known before any
  pod starts: no DNS server, no race with a peer that is not up yet), so endpoints and ports in
  env and commands work as written, for any number of nodes.
* Each container runs attached (``run --rm``): the engine CLI is the process the
  supervisor starts, stops and waits, as it would a pod's process. Its output is the pod's log; its
  exit code the container's; a SIGTERM to it reaches the container. A CLI that had to be killed
  leaves its container behind, so the container is removed then; what is still there when the
  job ends (before Complete/Failed is written: :func:`remove_job`, bounded), or after a
  supervisor died or a job was deleted, is removed by label (``trainjob.local/uid``): nothing a
  job started outlives it.
* Images are used as they are when present; absent, they are pulled (``IfNotPresent``, the
  default), pulled every time (``Always``) or refused (``Never``), with the kubelet's events
  (Pulling, Pulled, Failed). A pull that fails (no registry reachable) fails the job with the
  engine's reason and what to do.
* Volumes are the job's directories (as for processes) mounted at their ``mountPath``; they are
  made writable by the image's user when the engine runs as root, and rootless podman maps this
  user into the container (``--userns keep-id``) so the files are this user's.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import re
import time
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from trainjob.errors import ConfigError
from trainjob.local.job import pods
from trainjob.local.job.containers import pod as cpod
from trainjob.local.job.containers.engine import LABEL_UID, Engine
from trainjob.local.job.containers.settings import ContainerSettings
from trainjob.local.job.podrun import PodRun
from trainjob.local.job.runner import EventSink
from trainjob.local.state import home as homes
from trainjob.runtime.plan import Plan

_RESERVED = 8  # the first addresses of the job's network: the gateway, dynamic ones
MAX_PODS = 240  # pods with an address of their own on the job's /24 network
# How long removing a job's containers and network may take before its end is written anyway
# (with a CleanupFailed event naming what is left): a loaded engine takes seconds a call.
CLOSE_TIMEOUT = 60.0
_NOT_FOUND = re.compile(
    r'exec: "([^"]+)": (?:executable file not found in \$PATH|stat [^:]+: no such file or directory)'
)
_PERMISSION = re.compile(r'exec: "([^"]+)": permission denied')
_PULL_HINT = (
    "no registry reachable? build the image here (hack/build-images.sh makes trainjob's "
    "localhost/trainjob/* images) or load it (podman load -i FILE), and it is used as it is"
)


def network_name(uid: str) -> str:
    return f"trainjob-{uid}"


def pull_policy(ctr: Mapping[str, object], settings: ContainerSettings) -> str:
    policy = ctr.get("imagePullPolicy")
    return str(policy) if policy in ("IfNotPresent", "Always", "Never") else settings.pull_policy


class ContainerRunner:
    """Pods as containers, for one job ``(namespace, name, uid)``."""

    kind = "container"

    def __init__(
        self,
        settings: ContainerSettings,
        job: tuple[str, str, str],
        events: EventSink,
        home: Path | None = None,
    ) -> None:
        self.settings = settings
        self.engine = Engine(settings.engine, settings.host)
        self.job = job
        self.events = events
        self.home = home
        self.network: cpod.PodNetwork | None = None
        self._subnet = ""
        self._present: set[str] = set()
        self._user: list[str] | None = None

    # -- before submitting ------------------------------------------------------------------

    def check(
        self, plan: Plan, runtime: Mapping[str, object], home: Path, namespace: str, cwd: str
    ) -> list[str]:
        problem = self.engine.problem()
        if problem:
            return [f"the container backend cannot run containers here: {problem}"]
        problems: list[str] = []
        policy = (runtime.get("spec") or {}) if isinstance(runtime, dict) else {}
        if isinstance(policy, dict) and (policy.get("mlPolicy") or {}).get("mpi") is not None:
            problems.append(
                "MPI runtimes do not run on the container backend yet (mpirun over ssh between "
                "containers): run the job as processes (without --backend container) or on a cluster"
            )
        templates = pods.pod_templates(plan, "preflight")
        if len(templates) > MAX_PODS:
            problems.append(
                f"the container backend runs at most {MAX_PODS} pods a job (this one has "
                f"{len(templates)})"
            )
        seen: set[str] = set()
        for t in templates:
            for ctr in [*(t.spec.get("initContainers") or ()), *(t.spec.get("containers") or ())]:
                image = cpod.image_of(ctr, t.job, self.settings, self.engine.flavour)
                where = f'container "{ctr.get("name")}" of job "{t.job}"'
                if not image:
                    problems.append(f"{where} has no image")
                    continue
                if image in seen:
                    continue
                seen.add(image)
                if pull_policy(ctr, self.settings) == "Never" and not self.engine.image_exists(
                    image
                ):
                    problems.append(
                        f'{where}: image "{image}" is not present here and its pull policy is '
                        f"Never: build or load it first ({_PULL_HINT.split('? ', 1)[1]})"
                    )
        return problems

    # -- the supervisor's side ---------------------------------------------------------------

    def new_attempt(self, plan: Plan, templates: list[pods.PodTemplate]) -> None:
        namespace, name, uid = self.job
        if not self._subnet:
            labels = {LABEL_UID: uid, "trainjob.local/job": f"{namespace}/{name}"}
            try:
                self._subnet = self.engine.create_network(network_name(uid), labels)
            except Exception as e:  # a ConfigError from the engine
                raise pods.PodConfigError(f"cannot create the job's network: {e}") from e
        hosts = ipaddress.ip_network(self._subnet, strict=False).hosts()
        for _ in range(_RESERVED):  # the gateway, the anchor pod: dynamic addresses
            next(hosts, None)
        addresses = {t.hostname: str(ip) for t, ip in zip(templates, hosts, strict=False)}
        self.network = cpod.PodNetwork(network_name(uid), pods.subdomain(plan), addresses)

    def add_pods(self, plan: Plan, templates: list[pods.PodTemplate]) -> None:
        raise pods.PodConfigError("the container backend cannot add nodes to a running job yet")

    def _user_options(self) -> list[str]:
        if self._user is None:
            if self.engine.rootless():
                self._user = ["--userns", "keep-id"]
            elif os.geteuid() != 0:
                self._user = ["--user", f"{os.getuid()}:{os.getgid()}"]
            else:
                self._user = []  # the image's user; volumes are made writable for it
        return self._user

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
        if self.network is None:
            raise pods.PodConfigError("the job's network was not made (no attempt started)")
        for ctr in [*(pod.spec.get("initContainers") or ()), *(pod.spec.get("containers") or ())]:
            self._ensure_image(pod, ctr)
        user = self._user_options()
        if not user:
            # The image's user (not this one) writes there: an emptyDir is world-writable on a
            # cluster too, and so is a fresh PVC's root. Only the directories mounted are opened;
            # their parents (the private home) stay 0700, which a bind mount does not traverse.
            kept_dirs = set((kept or {}).values())
            checkpoints = (extra_env or {}).get(homes.ENV_CHECKPOINT_DIR)
            if checkpoints:
                kept_dirs.add(Path(checkpoints))
            for path in pods.volume_dirs(pod, volumes_root, kept).values():
                if path.is_dir() and (volumes_root in path.parents or path in kept_dirs):
                    path.chmod(0o777)
            if checkpoints and Path(checkpoints).is_dir():
                Path(checkpoints).chmod(0o777)
        scratch = volumes_root.parent / "containers"
        scratch.mkdir(mode=0o700, exist_ok=True)
        ctx = cpod.PodContext(self.engine, self.settings, self.network, self.job, user, scratch)
        return cpod.build_pod(pod, plan, volumes_root, ctx, kept, extra_env)

    def _ensure_image(self, pod: pods.PodTemplate, ctr: Mapping[str, object]) -> None:
        image = cpod.image_of(dict(ctr), pod.job, self.settings, self.engine.flavour)
        policy = pull_policy(ctr, self.settings)
        if image in self._present and policy != "Always":
            return
        present = policy != "Always" and self.engine.image_exists(image)
        if present:
            self.events(
                "Normal", "Pulled", f'Container image "{image}" already present on machine',
                "Pod", pod.name,
            )  # fmt: skip
        elif policy == "Never":
            self.events(
                "Warning", "ErrImageNeverPull",
                f'Container image "{image}" is not present with pull policy of Never', "Pod",
                pod.name,
            )  # fmt: skip
            raise pods.PodConfigError(
                f'container "{ctr.get("name")}": image "{image}" is not present with pull policy '
                "of Never"
            )
        else:
            self.events("Normal", "Pulling", f'Pulling image "{image}"', "Pod", pod.name)
            t0 = time.monotonic()
            why = self.engine.pull(image)
            if why:
                msg = f'Failed to pull image "{image}": {why}'
                self.events("Warning", "Failed", msg, "Pod", pod.name)
                raise pods.PodConfigError(f'container "{ctr.get("name")}": {msg}; {_PULL_HINT}')
            self.events(
                "Normal", "Pulled",
                f'Successfully pulled image "{image}" in {time.monotonic() - t0:.1f}s', "Pod",
                pod.name,
            )  # fmt: skip
        self._present.add(image)

    def start(self, pod: pods.LocalPod, log: Path, probe_pool: ThreadPoolExecutor) -> PodRun:
        for ctr in (*pod.init_containers, *pod.containers):
            if isinstance(ctr, cpod.ContainerProcess) and ctr.env_file:
                fd = os.open(ctr.env_file, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o600)
                with os.fdopen(fd, "w") as f:
                    f.write(ctr.env_file_text)
        run = PodRun(pod, log, probe_pool, on_exit=lambda ctr, rc: self._exited(ctr, rc, log))
        run.start()
        return run

    def _exited(self, ctr: pods.LocalContainer, rc: int | None, log: Path) -> str:
        """A container's CLI has ended: remove the container if it may be left; say why it
        ended when the log shows the engine refused it (its command is not in the image)."""
        if not isinstance(ctr, cpod.ContainerProcess):
            return ""
        if ctr.env_file:
            with contextlib.suppress(OSError):
                os.unlink(ctr.env_file)
        if rc is None or rc < 0 or rc == 124:
            self.engine.remove([ctr.container])  # its CLI was killed: the container may run on
        if rc == 124 and ctr.timeout:
            return (
                f"stopped after the initializer timeout of {ctr.timeout}s "
                "(ContainerBackendConfig.initializer_timeout)"
            )
        if rc in (125, 126, 127):
            said = _log_tail(log)
            m = _NOT_FOUND.search(said)
            if m:
                return f'command "{m.group(1)}" not found in image "{ctr.image}"'
            m = _PERMISSION.search(said)
            if m:
                return f'command "{m.group(1)}" is not executable in image "{ctr.image}"'
        return ""

    def close(self, timeout: float = CLOSE_TIMEOUT) -> list[str]:
        """Remove the job's containers (any left) and its network, and see them gone; what is
        still there after ``timeout`` seconds (empty: nothing)."""
        _namespace, _name, uid = self.job
        left = remove_job(self.engine, uid, timeout)
        if not left:
            self._subnet = ""
        return left

    def remove_pods(self, timeout: float = CLOSE_TIMEOUT) -> list[str]:
        """Remove the job's containers (its pods were stopped: a suspend), keep its network;
        what is still there after ``timeout`` seconds."""
        return remove_job(self.engine, self.job[2], timeout, network=False)


def _log_tail(log: Path, size: int = 8192) -> str:
    try:
        with log.open("rb") as f:
            f.seek(max(0, f.seek(0, 2) - size))
            return f.read().decode(errors="replace")
    except OSError:
        return ""


def remove_job(engine: Engine, uid: str, timeout: float, *, network: bool = True) -> list[str]:
    """Remove every container (and with ``network``, every network) of job ``uid`` and look
    again until none is left, for at most ``timeout`` seconds: a loaded engine can take seconds
    per call, and one that does not answer must not keep the job from ending. What is still
    there (or why the engine could not say), each with the command that removes it; empty when
    everything is gone."""
    label = f"{LABEL_UID}={uid}"
    deadline = time.monotonic() + timeout
    left: list[str] = []
    named: list[str] = []  # what the engine's last whole answer named
    while True:
        left = []
        try:
            names = engine.containers(label, timeout=_remaining(deadline))
            engine.remove(names, timeout=_remaining(deadline))
            nets = engine.networks(label, timeout=_remaining(deadline)) if network else []
            for net in nets:
                engine.remove_network(net, timeout=_remaining(deadline))
            names = engine.containers(label, timeout=_remaining(deadline))
            nets = engine.networks(label, timeout=_remaining(deadline)) if network else []
        except ConfigError as e:  # the engine did not answer, or failed: try again until done
            # what an earlier look named, if one did (a loaded engine's last calls get the
            # little time left and can time out), else the command that finds and removes them
            left = named or [f"the job's containers (the engine failed: {e}); remove them with: "
                             f"{engine.command} rm --force $({engine.command} ps --all --quiet "
                             f"--filter label={label})"]  # fmt: skip
        else:
            base = engine.command
            left = [f"container {n} ({base} rm --force {n})" for n in names]
            left += [f"network {n} ({base} network rm {n})" for n in nets]
            named = left
        if not left or time.monotonic() >= deadline:
            return left
        time.sleep(0.5)


def _remaining(deadline: float) -> float:
    return max(1.0, deadline - time.monotonic())


def clean_up_job(settings: ContainerSettings, uid: str) -> list[str]:
    """Remove every container and network of job ``uid`` (its supervisor could not); what is
    still there (:func:`remove_job`)."""
    return remove_job(Engine(settings.engine, settings.host), uid, CLOSE_TIMEOUT)
