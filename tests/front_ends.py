"""The CLI and the SDK as two front ends over one job, for tests that hold them side by side.

``Cli`` runs ``trainjob`` as a user does (a subprocess, with the given environment and global
options); ``Sdk`` calls a ``TrainerClient``. Both answer the same questions about a job
(:class:`FrontEnd`), so a test can ask both and expect the same answers. Used by
tests/e2e/test_front_ends.py (the local backend) and tests/integration/test_front_ends_cluster.py (a
real apiserver).
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Protocol

from trainjob import TrainerClient

CLI = [sys.executable, "-m", "trainjob.cli"]


class FrontEnd(Protocol):
    """What a user asks of a job, through one front end."""

    def status(self, name: str) -> str: ...
    def reasons(self, name: str) -> list[str]: ...
    def follow(self, name: str, first: Callable[[], None]) -> list[str]:
        """The step's log followed to its end; ``first`` is called once the first line came."""
        ...

    def watch(self, name: str, first: Callable[[], None]) -> list[str]:
        """The job's statuses as they change until it ends (with the CLI, its restarts too);
        ``first`` is called after the first."""
        ...

    def delete(self, name: str) -> None: ...
    def exists(self, name: str) -> bool: ...


class Cli:
    """``trainjob [GLOBAL...] COMMAND ... [-n NAMESPACE]`` in ``env``."""

    def __init__(
        self, env: Mapping[str, str], options: Sequence[str] = (), namespace: str | None = None
    ) -> None:
        self.env = dict(env)
        self.options = list(options)
        self.ns = ["-n", namespace] if namespace else []

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*CLI, *self.options, *args, *self.ns],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )

    def popen(self, *args: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [*CLI, *self.options, *args, *self.ns],
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def status(self, name: str) -> str:
        got = self.run("get", "jobs", name)
        assert got.returncode == 0, got.stderr
        return got.stdout.splitlines()[1].split()[1]

    def reasons(self, name: str) -> list[str]:
        got = self.run("describe", "job", name)
        assert got.returncode == 0, got.stderr
        lines = got.stdout.splitlines()
        events = lines[lines.index("Events:") + 3 :]  # after the header and its dashes
        return [line.split()[1] for line in events if line.strip()]

    def follow(self, name: str, first: Callable[[], None]) -> list[str]:
        proc = self.popen("logs", name, "--step", "node-0", "-f")
        lines: list[str] = []
        try:
            assert proc.stdout is not None
            for line in proc.stdout:
                lines.append(line.rstrip("\n"))
                if len(lines) == 1:
                    first()
            _, err = proc.communicate(timeout=60)
        finally:
            proc.kill()
        assert proc.returncode == 0, err
        return lines

    def watch(self, name: str, first: Callable[[], None]) -> list[str]:
        proc = self.popen("get", "jobs", name, "-w")
        statuses: list[str] = []
        try:
            assert proc.stdout is not None
            assert proc.stdout.readline().split()[:2] == ["NAME", "STATUS"]
            for line in proc.stdout:  # a row again when STATUS or RESTARTS change
                cells = line.split()
                statuses.append(f"{cells[1]} restarts={cells[4]}")
                if len(statuses) == 1:
                    first()
                if cells[1] in ("Complete", "Failed"):
                    break
            proc.send_signal(signal.SIGINT)  # Ctrl-C ends the watch quietly
            _, err = proc.communicate(timeout=30)
        finally:
            proc.kill()
        assert proc.returncode == 0, err
        return statuses

    def delete(self, name: str) -> None:
        got = self.run("delete", name)
        assert got.returncode == 0 and got.stdout.strip().endswith("deleted"), got.stderr

    def exists(self, name: str) -> bool:
        got = self.run("get", "jobs", name, "-o", "json")
        if got.returncode == 0:
            return bool(json.loads(got.stdout))
        assert "not found" in got.stderr, got.stderr
        return False


class Sdk:
    def __init__(self, client: TrainerClient) -> None:
        self.client = client

    def status(self, name: str) -> str:
        return self.client.get_job(name).status

    def reasons(self, name: str) -> list[str]:
        return [e.reason for e in self.client.get_job_events(name)]

    def follow(self, name: str, first: Callable[[], None]) -> list[str]:
        lines: list[str] = []
        for line in self.client.get_job_logs(name, follow=True):
            lines.append(line)
            if len(lines) == 1:
                first()
        return lines

    def watch(self, name: str, first: Callable[[], None]) -> list[str]:
        seen: list[str] = []

        def changed(job: object) -> None:
            status = getattr(job, "status", "")
            if not seen or seen[-1] != status:
                seen.append(status)
            if len(seen) == 1:
                first()

        self.client.wait_for_job_status(
            name, {"Complete", "Failed"}, timeout=90, polling_interval=0.2, callbacks=[changed]
        )
        return seen

    def delete(self, name: str) -> None:
        self.client.delete_job(name)

    def exists(self, name: str) -> bool:
        try:
            self.client.get_job(name)
        except RuntimeError as e:
            assert "not found" in str(e)
            return False
        return True
