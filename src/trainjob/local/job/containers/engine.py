"""The container engine's command line (podman or docker): the only place that runs it.

Every call goes through the engine's own CLI, as a user would type it, so whatever configures
the engine (``containers.conf``, ``CONTAINER_HOST``, a docker context) applies. Values that may be
secret never go on a command line: a container's environment is passed by name (``-e NAME``) and
its values through the CLI's own environment. Used by :mod:`trainjob.local.job.containers.runner`.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from trainjob.errors import ConfigError
from trainjob.local.job.containers.settings import ENGINES

LABEL_UID = "trainjob.local/uid"
LABEL_JOB = "trainjob.local/job"
CALL_TIMEOUT = 120.0
PULL_TIMEOUT = 3600.0


def flavour(command: str) -> str:
    """``docker`` or ``podman``: which CLI ``command`` is (by its name)."""
    return "docker" if "docker" in Path(command).name else "podman"


class Engine:
    """One container engine CLI (``settings.engine``), optionally of a remote ``host``."""

    def __init__(self, command: str, host: str | None = None) -> None:
        self.command = command
        self.host = host
        self.flavour = flavour(command)

    def base(self) -> list[str]:
        """The CLI with its global options (quiet, remote host)."""
        out = [self.command, "--log-level", "error" if self.flavour == "podman" else "fatal"]
        if self.host:
            out += ["--url", self.host] if self.flavour == "podman" else ["-H", self.host]
        return out

    def env(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        """The CLI's own environment: this process's, plus the values of ``-e NAME`` options."""
        out = dict(os.environ)
        out.update(extra or {})
        return out

    def call(
        self, *args: str, timeout: float = CALL_TIMEOUT, check: bool = False
    ) -> subprocess.CompletedProcess[str]:
        try:
            proc = subprocess.run(
                [*self.base(), *args],
                capture_output=True,
                text=True,
                timeout=timeout,
                stdin=subprocess.DEVNULL,
            )
        except FileNotFoundError:
            raise ConfigError(
                f"the container backend's engine {self.command!r} is not installed: "
                f"{install_hint(self.flavour)}"
            ) from None
        except subprocess.TimeoutExpired:
            raise ConfigError(
                f"{self.command} {args[0]} did not answer within {timeout:.0f}s"
            ) from None
        if check and proc.returncode != 0:
            raise ConfigError(f"{self.command} {' '.join(args[:2])}: {last_line(proc.stderr)}")
        return proc

    # -- the engine itself -----------------------------------------------------------------

    def problem(self) -> str:
        """Why this engine cannot run containers here ("" when it can, as far as it says)."""
        if shutil.which(self.command) is None:
            return f"{self.command} is not installed ({install_hint(self.flavour)})"
        try:
            proc = self.call("version", "--format", "{{.Server.Version}}", timeout=30)
        except ConfigError as e:
            return str(e)
        if proc.returncode != 0:
            return f"{self.command} does not run: {last_line(proc.stderr or proc.stdout)}"
        return ""

    def rootless(self) -> bool:
        """Whether the engine runs as this user (rootless podman) rather than as root."""
        if self.flavour != "podman":
            return False
        proc = self.call("info", "--format", "{{.Host.Security.Rootless}}")
        return proc.stdout.strip() == "true"

    # -- images ----------------------------------------------------------------------------

    def image_exists(self, image: str) -> bool:
        if self.flavour == "podman":
            return self.call("image", "exists", image).returncode == 0
        return self.call("image", "inspect", "--format", "{{.Id}}", image).returncode == 0

    def pull(self, image: str) -> str:
        """Pull ``image``; "" on success, else the engine's reason."""
        proc = self.call("pull", "--quiet", image, timeout=PULL_TIMEOUT)
        return "" if proc.returncode == 0 else last_line(proc.stderr or proc.stdout)

    # -- networks and containers ---------------------------------------------------------

    def create_network(self, name: str, labels: Mapping[str, str]) -> str:
        """Create a bridge network; its IPv4 subnet (``10.89.3.0/24``). Names are resolved by
        each container's /etc/hosts (``--add-host``), so podman's DNS server is not started."""
        label_args = [a for k, v in labels.items() for a in ("--label", f"{k}={v}")]
        if self.flavour == "podman":
            label_args.append("--disable-dns")
        self.remove_network(name)
        self.call("network", "create", *label_args, name, check=True)
        fmt = (
            "{{range .Subnets}}{{.Subnet}} {{end}}"
            if self.flavour == "podman"
            else "{{range .IPAM.Config}}{{.Subnet}} {{end}}"
        )
        out = self.call("network", "inspect", "--format", fmt, name, check=True).stdout.split()
        v4 = [s for s in out if ":" not in s]
        if not v4:
            raise ConfigError(f"network {name} has no IPv4 subnet ({' '.join(out) or 'none'})")
        return v4[0]

    def remove_network(self, name: str, timeout: float = CALL_TIMEOUT) -> None:
        args = ["network", "rm", "--force", name] if self.flavour == "podman" else [
            "network", "rm", name
        ]  # fmt: skip
        self.call(*args, timeout=timeout)

    def containers(self, label: str, timeout: float = CALL_TIMEOUT) -> list[str]:
        """Names of the containers (running or not) with ``label`` (``key=value``); a
        ConfigError when the engine cannot say (so that none is taken for gone)."""
        proc = self.call(
            "ps", "--all", "--filter", f"label={label}", "--format", "{{.Names}}",
            timeout=timeout, check=True,
        )  # fmt: skip
        return [n for n in proc.stdout.split() if n]

    def networks(self, label: str, timeout: float = CALL_TIMEOUT) -> list[str]:
        """Names of the networks with ``label``; a ConfigError when the engine cannot say."""
        proc = self.call(
            "network", "ls", "--filter", f"label={label}", "--format", "{{.Name}}",
            timeout=timeout, check=True,
        )  # fmt: skip
        return [n for n in proc.stdout.split() if n]

    def remove(self, names: Sequence[str], timeout: float = CALL_TIMEOUT) -> None:
        """Kill and remove containers now (no grace: their pods were stopped already)."""
        if names:
            args = ["rm", "--force", *names]
            if self.flavour == "podman":
                args[1:1] = ["--ignore", "--time", "0"]
            self.call(*args, timeout=timeout)

    def state(self, name: str) -> dict[str, object]:
        """``State`` of a container (exit code, OOMKilled, error); {} when it is gone."""
        proc = self.call("inspect", "--format", "{{json .State}}", name)
        if proc.returncode != 0:
            return {}
        with contextlib.suppress(json.JSONDecodeError):
            out = json.loads(proc.stdout)
            if isinstance(out, dict):
                return out
        return {}


def install_hint(flavour: str) -> str:
    if flavour == "docker":
        return "install Docker (https://docs.docker.com/engine/install/), or use podman"
    return (
        "install podman: apt-get install podman runc (scripts/setup-containers.sh), "
        "or see https://podman.io/docs/installation"
    )


def last_line(text: str) -> str:
    lines = [ln.strip() for ln in (text or "").splitlines() if ln.strip()]
    return lines[-1] if lines else "no output"


def detect(preferred: str | None, host: str | None = None) -> Engine:
    """The engine to use: ``preferred`` (docker, podman or a path), else docker when its daemon
    answers, else podman (upstream's order). ConfigError saying why when none can run."""
    if preferred:
        if not any(name in Path(preferred).name for name in ENGINES):
            raise ConfigError(f"container runtime must be docker or podman, not {preferred!r}")
        engine = Engine(preferred, host)
        problem = engine.problem()
        if problem:
            raise ConfigError(f"the container backend cannot use {preferred}: {problem}")
        return engine
    problems = []
    for name in ENGINES[::-1]:  # docker first, as upstream's container backend
        engine = Engine(name, host)
        problem = engine.problem()
        if not problem:
            return engine
        problems.append(problem)
    raise ConfigError(
        "the container backend needs docker or podman, and neither runs containers here: "
        + "; ".join(problems)
        + " (or run the job as processes: leave out --backend container)"
    )
