"""``trainjob --backend kubernetes run --follow`` on a cluster where no controller runs: a real
kube-apiserver with trainjob's CRDs and the built-in runtime, and nothing reconciling TrainJobs
(this module starts no controller). A new user's first try on a fresh cluster: the command must
not wait in silence at ``Created``; it says no controller acted and how to check, and Ctrl-C then
says the job stays and how to delete it.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from tests.integration.test_cli_kubernetes import JOB, cli_env

from trainjob.kube import Client
from trainjob.kube import resources as r

if TYPE_CHECKING:
    from tests.integration.conftest import ControlPlane

pytest_plugins = ["tests.integration.controller_fixtures"]
pytestmark = pytest.mark.integration

# The CLI as a user runs it, with the notice due after 2 s instead of 30 s.
SOON = (
    "import sys; from trainjob.cli import run; run.Stall.AFTER = 2.0; "
    "from trainjob.cli import main; sys.exit(main(sys.argv[1:]))"
)


def test_run_follow_without_a_controller_says_so_and_ctrl_c_says_the_job_stays(
    control_plane: ControlPlane, kube: Client, torch_runtime: str, namespace: str, tmp_path: Path
) -> None:
    job = tmp_path / "job.yaml"
    job.write_text(JOB.format(name="lonely"))
    argv = [sys.executable, "-c", SOON, "--backend", "kubernetes"]
    argv += ["--kubeconfig", str(control_plane.kubeconfig), "run", "-f", str(job)]
    proc = subprocess.Popen(
        [*argv, "-n", namespace, "--follow"],
        env=cli_env(control_plane),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # as in a terminal
    )
    assert proc.stderr is not None
    said: list[str] = []
    deadline = time.monotonic() + 120
    try:
        while not any("warning: no controller has acted" in line for line in said):
            line = proc.stderr.readline()
            assert line, f"the CLI ended first ({proc.wait()}): {said}"
            said.append(line)
            assert time.monotonic() < deadline, said
    finally:
        proc.send_signal(signal.SIGINT)
    out, rest = proc.communicate(timeout=60)
    text = "".join(said) + rest
    assert proc.returncode == 130, text
    assert f"no controller has acted on TrainJob {namespace}/lonely" in text
    assert "kubectl get pods -n trainjob-system" in text
    assert (
        f"trainjob.trainer.kubeflow.org/lonely goes on running (Ctrl-C only stopped watching it)"
        f": follow it again with 'trainjob logs lonely -n {namespace} -f', stop it with "
        f"'trainjob delete lonely -n {namespace}'"
    ) in text
    assert "Traceback" not in text
    assert out.splitlines() == ["trainjob.trainer.kubeflow.org/lonely created"]
    stored = kube.get(r.TRAINJOBS, "lonely", namespace)
    assert not stored.get("status")  # nothing acted on it, as the notice said
    kube.delete(r.TRAINJOBS, "lonely", namespace)
