"""The container backend, for real: each pod of a TrainJob a podman container of its image.

The same executor verbs as the process backend (tests/e2e/test_local_backend.py): two nodes that
find each other by their cluster DNS names, initializers before the trainer on a shared
/workspace, restarts, suspend/resume, delete, a dead supervisor, logs and statuses; and what only
containers have: the image's own command (a missing one fails with the reason), limits, pulls.
Skipped, saying why, where podman cannot run containers (tests/containers.py).
"""

from __future__ import annotations

import os
import re
import secrets
import shlex
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests import containers
from tests.e2e import local_jobs as L
from tests.e2e import sdk_funcs

from trainjob import ContainerBackendConfig, CustomTrainer, TrainerClient
from trainjob.api.load import load_file, parse
from trainjob.api.trainer import TrainJob
from trainjob.core import times
from trainjob.errors import ConfigError
from trainjob.local import LocalExecutor
from trainjob.local.job.containers import ContainerSettings, Mount
from trainjob.local.job.supervisor import ENV_TEARDOWN_TIMEOUT

pytestmark = pytest.mark.e2e
REPO = Path(__file__).resolve().parents[2]
TIMEOUT = 480.0  # a 2-node torch start in containers took over 240 s at load 12 (2 cores)


@pytest.fixture(scope="module")
def py_image() -> str:
    """A small image with ``python`` (trainjob's initializer image; user 65532)."""
    return containers.image("initializer")


@pytest.fixture
def ex(tmp_path: Path, py_image: str) -> Iterator[LocalExecutor]:
    executor = LocalExecutor(tmp_path / "home", runner=ContainerSettings().to_json())
    executor.apply_runtime(L.runtime(image=py_image))
    yield executor
    for s in executor.states(None, pods=False):
        executor.delete(s.name, s.namespace)


def _wait_for(pred: Any, timeout: float = TIMEOUT, what: str = "condition") -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = pred()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def _uid(ex: LocalExecutor, name: str) -> str:
    row = ex.store.job("default", name)
    assert row is not None
    return row.uid


def test_a_two_node_ddp_run_completes_with_the_all_reduce_checked_on_every_rank(
    tmp_path: Path,
) -> None:
    """The SDK with upstream's ContainerBackendConfig: torch-distributed on 2 nodes of the
    torch-trainer image; each node finds the master by its DNS name on the job's network."""
    trainer_image = containers.image("torch-trainer")
    client = TrainerClient(ContainerBackendConfig(home=tmp_path / "home", cwd=str(tmp_path)))
    assert client.backend.name == "container"
    name = client.train(
        runtime="torch-distributed",
        trainer=CustomTrainer(
            func=sdk_funcs.checked_all_reduce,
            num_nodes=2,
            image=trainer_image,
            resources_per_node={"cpu": 1},
        ),
    )
    job = client.wait_for_job_status(name, timeout=int(TIMEOUT))
    uid = _uid(client.backend.executor, name)  # type: ignore[attr-defined]
    # Complete is written once the containers, network and engine CLIs are gone: at once here
    assert containers.left_behind(uid) == {}, "nothing of the job is left once it is Complete"
    assert job.status == "Complete"
    assert [s.name for s in job.steps] == ["node-0", "node-1"]
    for rank in (0, 1):
        logs = "\n".join(client.get_job_logs(name, step=f"node-{rank}"))
        assert f"allreduce ok rank={rank} world=2 sum=3 on {name}-node-0-{rank}" in logs, logs
    client.delete_job(name)


def test_a_step_whose_image_lacks_its_command_fails_with_a_clear_reason(ex: LocalExecutor) -> None:
    tj = L.trainjob("nocmd", "")
    assert tj.spec.trainer is not None
    tj.spec.trainer.command = ["torchrun", "train.py"]
    ex.submit(tj)
    s = _wait_for(lambda: (st := ex.state("nocmd")).finished and st, what="the job to end")
    assert containers.left_behind(_uid(ex, "nocmd")) == {}, "nothing is left once it is Failed"
    assert s.phase == "Failed"
    (pod,) = s.pods
    image = containers.image("initializer")
    assert pod.message.startswith('container "node" failed: exit code 127 (command "torchrun"')
    assert f'command "torchrun" not found in image "{image}"' in pod.message


def test_two_nodes_resolve_each_other_and_see_the_env_of_a_cluster(ex: LocalExecutor) -> None:
    """Endpoints stay as written: the pods' hostnames and declared ports, not 127.0.0.1."""
    ex.apply_runtime(L.runtime("ported", ports=[29500], image=containers.image("initializer")))
    code = textwrap.dedent(
        """
        import os, socket, time
        me = socket.gethostname()
        peer = os.environ["PEER"]
        deadline = time.time() + 60
        while True:
            try:
                addr = socket.gethostbyname(peer)
                break
            except OSError:
                if time.time() > deadline:
                    raise
                time.sleep(0.2)
        if os.environ["INDEX"] == "0":
            s = socket.create_server(("", 29500)); c, _ = s.accept(); c.sendall(me.encode()); c.close()
        else:
            for _ in range(300):
                try:
                    c = socket.create_connection((peer, 29500), timeout=2); break
                except OSError:
                    time.sleep(0.2)
            print("heard", c.recv(100).decode())
        print("me", me, "index", os.environ["INDEX"], "peer", peer, addr)
        """
    )
    ex.submit(L.trainjob("dns", code, runtime="ported", nodes=2, env={"PEER": "dns-node-0-0.dns"}))
    s = ex.wait("dns", timeout=TIMEOUT, poll=0.01)
    assert containers.left_behind(_uid(ex, "dns")) == {}, "nothing is left once it is Complete"
    assert s.phase == "Complete"
    n0, n1 = (list(ex.logs("dns", index=i)) for i in (0, 1))
    assert n1[0] == "heard dns-node-0-0"
    assert n0[-1].startswith("me dns-node-0-0 index 0 peer dns-node-0-0.dns 10.")
    assert n1[-1].split()[-1] == n0[-1].split()[-1], "both resolve the master to its address"


def test_an_initializer_runs_first_and_the_trainer_reads_what_it_wrote(
    tmp_path: Path, py_image: str
) -> None:
    """dependsOn Complete, and one /workspace for both: the job's own directory, mounted."""
    ex = LocalExecutor(tmp_path / "home", runner=ContainerSettings().to_json())
    ex.apply_runtime(
        L.runtime(
            "with-init",
            image=py_image,
            initializer="open('/workspace/data.txt', 'w').write('from the initializer')",
        )
    )
    ex.submit(L.trainjob("init", "print(open('/workspace/data.txt').read())", runtime="with-init"))
    s = ex.wait("init", timeout=TIMEOUT)
    assert s.phase == "Complete"
    assert list(ex.logs("init")) == ["from the initializer"]
    init, node = sorted(s.pods, key=lambda p: p.job)
    assert init.job == "dataset-initializer" and init.finished and node.started
    assert init.finished <= node.started
    written = ex.home / "jobs/default/init/volumes/initializer/data.txt"
    assert written.read_text() == "from the initializer", "the workspace is the job's directory"
    ex.delete("init")


def test_a_failing_pod_restarts_the_jobset_and_the_next_attempt_completes(
    tmp_path: Path, py_image: str
) -> None:
    ex = LocalExecutor(tmp_path / "home", runner=ContainerSettings().to_json())
    ex.apply_runtime(L.runtime("retry", image=py_image, failure_policy={"maxRestarts": 2}))
    code = "import os, sys; print('attempt', os.environ['ATTEMPT']); sys.exit(0 if os.environ['ATTEMPT'] == '1' else 3)"
    ex.submit(L.trainjob("flaky", code, runtime="retry"))
    s = ex.wait("flaky", timeout=TIMEOUT, poll=0.01)
    assert containers.left_behind(_uid(ex, "flaky")) == {}, "nothing is left once it is Complete"
    assert (s.phase, s.restarts) == ("Complete", 1)
    assert list(ex.logs("flaky")) == ["attempt 1"]
    old = ex.home / "jobs/default/flaky/logs/node-0.log.1"
    assert old.read_text() == "attempt 0\n", "the failed attempt's log is kept"
    reasons = [e.reason for e in ex.events("flaky")]
    assert "Restarting" in reasons and reasons[-1] == "AllJobsCompleted"
    ex.delete("flaky")


def test_suspend_removes_the_containers_resume_starts_new_ones_delete_leaves_nothing(
    ex: LocalExecutor,
) -> None:
    code = "import os, time; print('up', os.environ['HOSTNAME'], flush=True); time.sleep(600)"
    ex.submit(L.trainjob("pausable", code, nodes=2))
    uid = _uid(ex, "pausable")
    _wait_for(lambda: len(containers.left_behind(uid).get("containers", [])) == 2, what="2 up")
    _wait_for(lambda: list(ex.logs("pausable")) == ["up pausable-node-0-0"], what="its log")
    ex.suspend("pausable")
    s = ex.state("pausable")
    assert s.phase == "Suspended" and {p.phase for p in s.pods} == {"Pending"}
    # Suspended is written once the pods' containers are gone (the network stays for the resume)
    assert containers.left_behind(uid).keys() == {"networks"}, "the containers go before Suspended"
    ex.resume("pausable")
    _wait_for(lambda: len(containers.left_behind(uid).get("containers", [])) == 2, what="again")
    assert ex.state("pausable").phase == "Running"
    ex.delete("pausable")
    assert containers.left_behind(uid) == {}, "no container, network or pod outlives the job"


def test_a_killed_supervisor_fails_the_job_and_its_containers_are_removed(
    ex: LocalExecutor,
) -> None:
    ex.submit(L.trainjob("orphan", "import time; print('up', flush=True); time.sleep(600)"))
    uid = _uid(ex, "orphan")
    _wait_for(lambda: list(ex.logs("orphan")) == ["up"], what="the container to run")
    row = ex.store.job("default", "orphan")
    assert row is not None and row.supervisor_pid
    os.kill(row.supervisor_pid, signal.SIGKILL)
    s = _wait_for(lambda: (st := ex.state("orphan")).finished and st, what="Failed")
    # the reader that found the supervisor dead removed what it left before writing Failed
    assert containers.left_behind(uid) == {}, "nothing is left once it is Failed"
    assert (s.phase, s.reason) == ("Failed", "SupervisorDied")


def test_the_deadline_fails_the_job_once_its_containers_and_network_are_gone(
    ex: LocalExecutor,
) -> None:
    """activeDeadlineSeconds, on 2 nodes: Failed (DeadlineExceeded) is visible only once nothing
    of the job is left, whether the deadline found the containers running or still starting."""
    code = "import time; print('up', flush=True); time.sleep(600)"
    ex.submit(L.trainjob("late", code, nodes=2, activeDeadlineSeconds=15))
    uid = _uid(ex, "late")
    s = ex.wait("late", phases={"Failed"}, timeout=TIMEOUT, poll=0.01)  # looked at at once
    assert containers.left_behind(uid) == {}, "nothing is left once it is Failed"
    assert s.reason == "DeadlineExceeded"


# A stand-in engine: the real podman, except that it will not remove one job's container. A real
# engine that cannot remove a container (a busy storage driver, a container stuck in a kernel
# call, a dead conmon) cannot be made on purpose here, so this wrapper plays it: it runs that
# container without ``--rm`` (so it stays once it exited), refuses ``rm`` for it, and removes a
# network only without ``--force`` (podman's --force would remove the container with it), so the
# network it is attached to stays too, as it would with a real stuck container.
_STAND_IN = """#!/bin/bash
# trainjob's tests: podman ({real}), refusing to remove the containers named {stuck}*
real={real}
stuck={stuck}
args=("$@")
i=0
while [[ ${{args[i]}} == --log-level || ${{args[i]}} == --url ]]; do i=$((i + 2)); done
case "${{args[i]}}" in
run)
    if [[ " $* " == *" --name $stuck"* && ${{args[i + 1]}} == --rm ]]; then
        exec "$real" "${{args[@]:0:i+1}}" "${{args[@]:i+2}}"
    fi ;;
rm)
    for a in "${{args[@]:i+1}}"; do
        if [[ $a == "$stuck"* ]]; then
            echo "Error: (test stand-in) cannot remove container $a" >&2
            exit 2
        fi
    done ;;
network)
    if [[ ${{args[i + 1]}} == rm ]]; then
        keep=(); for a in "$@"; do [[ $a == --force ]] || keep+=("$a"); done
        exec "$real" "${{keep[@]}}"
    fi ;;
esac
exec "$real" "$@"
"""


# The teardown bound of the test below, not the default minute (the supervisor reads it from
# the environment it inherits): what is measured is that the removal gives up at the bound.
BOUND = 10.0


def test_a_container_the_engine_cannot_remove_is_named_and_the_job_ends_all_the_same(
    tmp_path: Path, py_image: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The engine refuses to remove the job's container (a stand-in engine, above): the end is
    still written, once the bounded removal (60 s; :data:`BOUND` here) gave up, and a
    CleanupFailed event names the container and network left and the command that removes each
    (it does)."""
    monkeypatch.setenv(ENV_TEARDOWN_TIMEOUT, f"{BOUND:g}")
    name = f"stuck-{secrets.token_hex(3)}"  # the stand-in's refusal touches no other test's
    real = shutil.which("podman")
    assert real is not None
    engine = tmp_path / "bin" / "podman"  # named podman: the backend speaks podman's CLI to it
    engine.parent.mkdir()
    engine.write_text(_STAND_IN.format(real=shlex.quote(real), stuck=f"{name}-node-0-0-"))
    engine.chmod(0o755)
    ex = LocalExecutor(tmp_path / "home", runner=ContainerSettings(engine=str(engine)).to_json())
    ex.apply_runtime(L.runtime(image=py_image))
    ex.submit(L.trainjob(name, "print('done', flush=True)"))
    uid = _uid(ex, name)
    try:
        s = ex.wait(name, phases={"Complete", "Failed"}, timeout=TIMEOUT + BOUND)
        left = containers.left_behind(uid)
        assert s.phase == "Complete", s.message
        assert list(ex.logs(name)) == ["done"]
        (cleanup,) = [e for e in ex.events(name) if e.reason == "CleanupFailed"]
        assert cleanup.type == "Warning"
        assert f"could be removed within {BOUND:g}s: " in cleanup.message
        (ctr,) = left.get("containers", [])
        assert left.get("networks") == [f"trainjob-{uid}"] and "processes" not in left, left
        # named with the command that removes it: the stand-in's path, as the backend was given it
        commands = re.findall(r"(?:container|network) (\S+) \(([^)]*)\)", cleanup.message)
        assert [n for n, _ in commands] == [ctr, f"trainjob-{uid}"], cleanup.message
        assert commands[0][1] == f"{engine} rm --force {ctr}"
        assert commands[1][1] == f"{engine} network rm trainjob-{uid}"
        # the removal was tried for its BOUND from the container's exit, and gave up (the event
        # is written then, the job's end just after it): bounded, with a wide margin for load
        (pod,) = s.pods
        ended, gave_up = times.parse_datetime(pod.finished), times.parse_datetime(cleanup.timestamp)
        assert ended is not None and gave_up is not None
        waited = (gave_up - ended).total_seconds()
        assert BOUND - 2 <= waited <= BOUND + 60, (waited, s.pods)
        for _, command in commands:  # the named commands, with the real engine, remove what is left
            argv = shlex.split(command)
            assert argv[0] == str(engine)
            subprocess.run([real, *argv[1:]], capture_output=True, timeout=120, check=True)
    finally:  # whatever happened above, the real engine removes what the stand-in kept
        label = f"label=trainjob.local/uid={uid}"
        for kept in containers.podman("ps", "-aq", "--filter", label, check=False).stdout.split():
            containers.podman("rm", "--force", kept, check=False)
        containers.podman("network", "rm", "--force", f"trainjob-{uid}", check=False)
    assert containers.left_behind(uid) == {}
    ex.delete(name)  # nothing left to remove: at once
    assert not ex.exists(name)


def test_limits_are_the_containers_limits(ex: LocalExecutor) -> None:
    code = textwrap.dedent(
        """
        from pathlib import Path
        for p in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
            if Path(p).exists():
                print("memory", Path(p).read_text().strip())
                break
        """
    )
    tj = L.trainjob("limited", code)
    assert tj.spec.trainer is not None
    tj.spec.trainer.resources_per_node = parse_resources({"limits": {"memory": "96Mi", "cpu": "1"}})
    ex.submit(tj)
    assert ex.wait("limited", timeout=TIMEOUT).phase == "Complete"
    assert list(ex.logs("limited")) == [f"memory {96 * 1024 * 1024}"]


def parse_resources(spec: dict[str, Any]) -> Any:
    tj = parse(
        {
            "apiVersion": "trainer.kubeflow.org/v1alpha1",
            "kind": "TrainJob",
            "metadata": {"name": "x"},
            "spec": {"runtimeRef": {"name": "plain"}, "trainer": {"resourcesPerNode": spec}},
        }
    )
    assert isinstance(tj, TrainJob) and tj.spec.trainer is not None
    return tj.spec.trainer.resources_per_node


def test_an_image_that_cannot_be_pulled_fails_the_job_with_the_reason_and_the_fix(
    tmp_path: Path,
) -> None:
    containers.require_podman()
    ex = LocalExecutor(tmp_path / "home", runner=ContainerSettings().to_json())
    ex.apply_runtime(L.runtime("remote", image="localhost/trainjob/not-built:dev"))
    ex.submit(L.trainjob("pull", "print(1)", runtime="remote"))
    s = _wait_for(lambda: (st := ex.state("pull")).finished and st, what="the job to fail")
    assert (s.phase, s.reason) == ("Failed", "CreateContainerConfigError")
    assert 'Failed to pull image "localhost/trainjob/not-built:dev"' in s.message
    assert "hack/build-images.sh" in s.message
    events = {(e.reason, e.message.split(":")[0]) for e in ex.events("pull")}
    assert ("Pulling", 'Pulling image "localhost/trainjob/not-built') in events
    ex.delete("pull")
    never = LocalExecutor(
        tmp_path / "home", runner=ContainerSettings(pull_policy="Never").to_json()
    )
    with pytest.raises(
        ConfigError, match='image "localhost/trainjob/not-built:dev" is not present'
    ):
        never.submit(L.trainjob("never", "print(1)", runtime="remote"))


def test_the_llm_lora_example_runs_on_the_llm_trainer_image(tmp_path: Path) -> None:
    """examples/llm-lora.yaml on the container backend: trainjob's initializer image for both of
    upstream's initializer steps, its llm-trainer image for torchtune-trainer's (its ``tune run``
    is trainjob's LLM trainer), the demo model and data mounted read-only for file://."""
    llm, init = containers.image("llm-trainer"), containers.image("initializer")
    demo = tmp_path / "demo"
    proc = subprocess.run(
        [sys.executable, "-m", "trainjob.trainers.llm.demo", str(demo)], capture_output=True
    )
    assert proc.returncode == 0, proc.stderr
    for path in [demo, *demo.rglob("*")]:  # the images' user (65532) reads it: not 0600
        path.chmod(0o755 if path.is_dir() else 0o644)
    tj = load_file(REPO / "examples" / "llm-lora.yaml")[0]
    assert isinstance(tj, TrainJob) and tj.spec.initializer is not None
    assert tj.spec.initializer.dataset and tj.spec.initializer.model
    tj.spec.initializer.dataset.storage_uri = f"file://{demo}/dataset"
    tj.spec.initializer.model.storage_uri = f"file://{demo}/model"
    settings = ContainerSettings(
        step_images={"dataset-initializer": init, "model-initializer": init},
        images={"ghcr.io/kubeflow/trainer/torchtune-trainer:latest": llm},
        mounts=(Mount(str(demo), str(demo), read_only=True),),
    )
    ex = LocalExecutor(tmp_path / "home", runner=settings.to_json())
    ex.submit(tj)
    s = _wait_for(lambda: (st := ex.state("llm-lora")).finished and st, 900, "the fine-tune")
    assert containers.left_behind(_uid(ex, "llm-lora")) == {}, "nothing is left once it ended"
    logs = "\n".join(ex.logs("llm-lora"))
    assert s.phase == "Complete", (s.message, logs[-3000:])
    assert re.search(r"^Epoch 3/3 done: mean loss [0-9.]+", logs, re.M), logs[-2000:]
    # kept after the job (docs/lifecycle.md): $TRAINJOB_HOME/outputs/default/llm-lora/RUN/...,
    # mounted into the containers at the runtime's mountPath
    out = Path(next(o.location for o in ex.outputs("llm-lora") if o.name == "output_dir"))
    assert (out / "adapter_config.json").exists() and (out / "adapter_model.safetensors").exists()
    ex.delete("llm-lora")
