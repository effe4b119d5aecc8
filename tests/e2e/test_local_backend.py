"""The local backend end to end: real jobs, real processes, one fresh TRAINJOB_HOME per test.

Most jobs run small ``python -c`` programs on a plain runtime (tests/e2e/local_jobs.py) so they
take seconds; the torch and MPI examples are in test_local_examples.py.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.e2e import local_jobs as L

from trainjob.api.load import parse
from trainjob.api.trainer import ClusterTrainingRuntime
from trainjob.errors import AlreadyExistsError, ConfigError, InvalidError, NotFoundError
from trainjob.executor.model import JobFailedError
from trainjob.local import LocalExecutor
from trainjob.local.state import home as homes
from trainjob.local.state import procs

pytestmark = pytest.mark.e2e
TIMEOUT = 90.0


@pytest.fixture
def ex(tmp_path: Path) -> Iterator[LocalExecutor]:
    executor = LocalExecutor(tmp_path / "home")
    executor.apply_runtime(L.runtime())
    yield executor
    for s in executor.states(None, pods=False):
        executor.delete(s.name, s.namespace)


def _wait_for(pred, timeout: float = TIMEOUT, what: str = "condition"):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = pred()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def _pid_alive(pid: int) -> bool:
    return procs.start_time(pid) is not None


def _conditions(ex: LocalExecutor, name: str) -> dict[str, tuple[str, str, str]]:
    st = ex.get(name).status
    assert st is not None
    return {c.type: (c.status, c.reason, c.message) for c in st.conditions or ()}


def test_a_two_node_job_runs_each_pod_with_its_index_and_completes(
    ex: LocalExecutor, tmp_path: Path
) -> None:
    code = "import os; print('index', os.environ['INDEX'], 'pod', os.environ['POD_NAME'])"
    stored = ex.submit(L.trainjob("two", code, nodes=2), cwd=str(tmp_path))
    assert stored.metadata.uid and stored.metadata.creation_timestamp
    s = ex.wait("two", timeout=TIMEOUT)
    assert s.phase == "Complete" and s.reason == "AllJobsCompleted"
    for i in (0, 1):
        (line,) = list(ex.logs("two", index=i))
        assert line.startswith(f"index {i} pod two-node-0-{i}-")
    assert _conditions(ex, "two")["Complete"] == (
        "True",
        "AllJobsCompleted",
        "jobset completed successfully",
    )
    job_status = ex.get("two").status.jobs_status  # type: ignore[union-attr]
    assert [(j.name, j.succeeded, j.failed) for j in job_status or ()] == [("node", 1, 0)]


def test_initializer_runs_before_the_trainer_and_shares_the_workspace(tmp_path: Path) -> None:
    ex = LocalExecutor(tmp_path / "home")
    init = "open('/workspace/data.txt', 'w').write('made by the initializer')"
    ex.apply_runtime(L.runtime("with-init", initializer=init))
    code = "print(open('/workspace/data.txt').read())"
    ex.submit(L.trainjob("init", code, runtime="with-init"), cwd=str(tmp_path))
    s = ex.wait("init", timeout=TIMEOUT)
    assert list(ex.logs("init")) == ["made by the initializer"]
    init_pod, node_pod = s.pod("dataset-initializer"), s.pod("node")
    assert init_pod and node_pod and init_pod.finished and node_pod.started
    assert init_pod.finished <= node_pod.started


def test_a_failing_pod_restarts_the_jobset_under_max_restarts(tmp_path: Path) -> None:
    ex = LocalExecutor(tmp_path / "home")
    ex.apply_runtime(L.runtime("retry", failure_policy={"maxRestarts": 2}))
    code = "import os, sys; print('attempt', os.environ['ATTEMPT']); sys.exit(0 if os.environ['ATTEMPT'] == '1' else 3)"
    ex.submit(L.trainjob("flaky", code, runtime="retry", nodes=2), cwd=str(tmp_path))
    s = ex.wait("flaky", timeout=TIMEOUT)
    assert s.restarts == 1 and all(p.restarts == 1 for p in s.pods)
    assert list(ex.logs("flaky")) == ["attempt 1"]
    log = ex.log_path("flaky")
    assert log.with_name(log.name + ".1").read_text() == "attempt 0\n"
    reasons = [e.reason for e in ex.events("flaky")]
    assert "Restarting" in reasons and reasons[-1] == "AllJobsCompleted"


def test_a_job_that_keeps_failing_fails_after_max_restarts(tmp_path: Path) -> None:
    ex = LocalExecutor(tmp_path / "home")
    ex.apply_runtime(L.runtime("retry", failure_policy={"maxRestarts": 1}))
    ex.submit(L.trainjob("bad", "raise SystemExit(7)", runtime="retry"), cwd=str(tmp_path))
    with pytest.raises(JobFailedError) as err:
        ex.wait("bad", timeout=TIMEOUT)
    s = err.value.state
    assert (s.phase, s.reason, s.restarts) == ("Failed", "ReachedMaxRestarts", 1)
    # JobSet's words, then which step and rank failed first and how (the local backend's)
    assert s.message.startswith(
        "jobset failed due to reaching max number of restarts (first failed job: bad-node-0)"
        '; first failed: node-0 (rank 0): container "node" failed: exit code 7'
    )
    assert s.pods[0].exit_code == 7


def test_without_a_failure_policy_one_failed_pod_fails_the_job(
    ex: LocalExecutor, tmp_path: Path
) -> None:
    ex.submit(L.trainjob("once", "raise SystemExit(2)"), cwd=str(tmp_path))
    s = ex.wait("once", phases={"Failed"}, timeout=TIMEOUT)
    assert s.reason == "FailedJobs"
    assert s.message == (
        "jobset failed due to one or more job failures (first failed job: once-node-0)"
        '; first failed: node-0 (rank 0): container "node" failed: exit code 2'
    )
    assert _conditions(ex, "once")["Failed"][1] == "FailedJobs"


def test_active_deadline_fails_the_job_and_stops_its_processes(
    ex: LocalExecutor, tmp_path: Path
) -> None:
    code = "import os, time; open('pid', 'w').write(str(os.getpid())); time.sleep(600)"
    # 10 s: the worker must have started (its pid file) before the deadline fails the job; a
    # loaded machine's python can take over 2 s to start
    ex.submit(L.trainjob("slow", code, activeDeadlineSeconds=10), cwd=str(tmp_path))
    _wait_for(lambda: (tmp_path / "pid").exists() and (tmp_path / "pid").read_text(), what="pid")
    s = ex.wait("slow", phases={"Failed"}, timeout=TIMEOUT)
    assert (s.reason, s.message) == ("DeadlineExceeded", "TrainJob exceeded its active deadline")
    assert _conditions(ex, "slow")["Failed"] == (
        "True",
        "DeadlineExceeded",
        "TrainJob exceeded its active deadline",
    )
    pid = int((tmp_path / "pid").read_text())
    _wait_for(lambda: not _pid_alive(pid), 60, "the worker to exit")


def test_delete_cancels_a_running_job(ex: LocalExecutor, tmp_path: Path) -> None:
    code = "import os, time; open('pid', 'w').write(str(os.getpid())); time.sleep(600)"
    ex.submit(L.trainjob("cancel", code), cwd=str(tmp_path))
    pid = int(_wait_for(lambda: (tmp_path / "pid").exists() and (tmp_path / "pid").read_text()))
    ex.delete("cancel")
    assert not _pid_alive(pid)
    with pytest.raises(NotFoundError):
        ex.state("cancel")
    assert not (ex.home / "jobs" / "default" / "cancel").exists()


def test_suspend_stops_the_pods_and_resume_starts_them_again(
    ex: LocalExecutor, tmp_path: Path
) -> None:
    code = textwrap.dedent(
        """
        import os, time
        print('started', flush=True)
        open('pid-' + os.environ['ATTEMPT'] + '-' + str(os.getpid()), 'w').close()
        while not os.path.exists('go'):
            time.sleep(0.05)
        print('done')
        """
    )
    ex.submit(L.trainjob("pausable", code), cwd=str(tmp_path))
    first = _wait_for(lambda: list(tmp_path.glob("pid-*")))
    pid = int(first[0].name.rsplit("-", 1)[1])
    tj = ex.suspend("pausable")
    assert tj.spec.suspend is True
    assert ex.state("pausable").phase == "Suspended"
    assert _conditions(ex, "pausable")["Suspended"] == (
        "True",
        "Suspended",
        "TrainJob is suspended",
    )
    _wait_for(lambda: not _pid_alive(pid), 60, "the suspended worker to exit")
    assert ex.state("pausable").pods[0].phase == "Pending"
    first[0].unlink()
    ex.resume("pausable")
    _wait_for(lambda: list(tmp_path.glob("pid-*")), what="the resumed worker")
    assert _conditions(ex, "pausable")["Suspended"] == ("False", "Resumed", "TrainJob is resumed")
    (tmp_path / "go").touch()
    assert ex.wait("pausable", timeout=TIMEOUT).phase == "Complete"
    assert list(ex.logs("pausable")) == ["started", "done"]  # the resumed pod's log only


def test_a_job_submitted_suspended_starts_only_when_resumed(
    ex: LocalExecutor, tmp_path: Path
) -> None:
    ex.submit(L.trainjob("later", "print('ran')", suspend=True), cwd=str(tmp_path))
    time.sleep(0.5)
    s = ex.state("later")
    assert s.phase == "Suspended" and s.pods[0].phase == "Pending"
    ex.resume("later")
    assert ex.wait("later", timeout=TIMEOUT).phase == "Complete"


def test_the_job_outlives_the_client_that_submitted_it(tmp_path: Path) -> None:
    home = tmp_path / "home"
    script = textwrap.dedent(
        f"""
        from pathlib import Path
        from tests.e2e import local_jobs as L
        from trainjob.local import LocalExecutor
        ex = LocalExecutor(Path({str(home)!r}))
        ex.apply_runtime(L.runtime())
        code = "import os, time\\nwhile not os.path.exists('go'): time.sleep(0.05)\\nprint('still here')"
        ex.submit(L.trainjob("orphan", code), cwd={str(tmp_path)!r})
        """
    )
    subprocess.run([sys.executable, "-c", script], check=True, cwd=Path(__file__).parents[2])
    ex = LocalExecutor(home)
    _wait_for(lambda: ex.state("orphan").phase == "Running", what="Running")
    (tmp_path / "go").touch()
    assert ex.wait("orphan", timeout=TIMEOUT).phase == "Complete"
    assert list(ex.logs("orphan")) == ["still here"]
    ex.delete("orphan")


ECHO = textwrap.dedent(
    """
    import os, socket, sys
    if os.environ['INDEX'] == '0':
        srv = socket.create_server(('', int(os.environ['PORT'])))
        conn, _ = srv.accept()
        conn.sendall(b'hello from ' + os.environ['JOB'].encode())
        print('served', os.environ['JOB'])
    else:
        host, port = os.environ['MASTER'].rsplit(':', 1)
        for _ in range(400):
            try:
                s = socket.create_connection((host, int(port)))
                break
            except OSError:
                import time; time.sleep(0.05)
        print(s.recv(100).decode())
    """
)


def test_two_jobs_listening_on_the_same_port_run_at_once(tmp_path: Path) -> None:
    ex = LocalExecutor(tmp_path / "home")
    ex.apply_runtime(L.runtime("net", ports=[29500]))
    for name in ("net-a", "net-b"):
        env = {"PORT": "29500", "JOB": name, "MASTER": f"{name}-node-0-0.{name}:29500"}
        ex.submit(L.trainjob(name, ECHO, runtime="net", nodes=2, env=env), cwd=str(tmp_path))
    for name in ("net-a", "net-b"):
        assert ex.wait(name, timeout=TIMEOUT).phase == "Complete"
        assert list(ex.logs(name, index=0)) == [f"served {name}"]
        assert list(ex.logs(name, index=1)) == [f"hello from {name}"]


def test_a_sigkilled_worker_fails_the_job_with_its_exit_code(
    ex: LocalExecutor, tmp_path: Path
) -> None:
    code = "import os, time; open('pid', 'w').write(str(os.getpid())); time.sleep(600)"
    ex.submit(L.trainjob("victim", code), cwd=str(tmp_path))
    pid = int(_wait_for(lambda: (tmp_path / "pid").exists() and (tmp_path / "pid").read_text()))
    os.kill(pid, signal.SIGKILL)
    s = ex.wait("victim", phases={"Failed"}, timeout=TIMEOUT)
    assert s.reason == "FailedJobs"
    assert s.pods[0].exit_code == 137
    assert s.pods[0].message == 'container "node" failed: exit code 137 (killed by SIGKILL)'


def test_a_sigkilled_supervisor_fails_the_job_and_stops_its_workers(
    ex: LocalExecutor, tmp_path: Path
) -> None:
    code = "import os, time; open('pid', 'w').write(str(os.getpid())); time.sleep(600)"
    ex.submit(L.trainjob("orphaned", code), cwd=str(tmp_path))
    pid = int(_wait_for(lambda: (tmp_path / "pid").exists() and (tmp_path / "pid").read_text()))
    row = ex.store.job("default", "orphaned")
    assert row is not None and row.supervisor_pid
    os.kill(row.supervisor_pid, signal.SIGKILL)
    s = _wait_for(lambda: (st := ex.state("orphaned")).finished and st, what="Failed")
    assert (s.phase, s.reason) == ("Failed", "SupervisorDied")
    assert "exited while the job was Running" in s.message
    _wait_for(lambda: not _pid_alive(pid), 60, "the orphaned worker to exit")
    assert s.pods[0].phase == "Failed"
    (node,) = ex.get("orphaned").status.jobs_status or []  # type: ignore[union-attr]
    assert (node.name, node.active, node.ready) == ("node", 0, 0)


def test_bad_input_is_refused_before_anything_starts(ex: LocalExecutor, tmp_path: Path) -> None:
    with pytest.raises(NotFoundError, match='"no-such-runtime" not found'):
        ex.submit(L.trainjob("x", "pass", runtime="no-such-runtime"))
    with pytest.raises(InvalidError, match="RFC 1035"):
        ex.submit(L.trainjob("Bad_Name", "pass"))
    # A namespace names a directory that delete removes: "../.." must never reach the disk.
    escape = L.trainjob("home", "pass")
    escape.metadata.namespace = "../../.."
    with pytest.raises(
        InvalidError,
        match=r'metadata\.namespace: Invalid value: "\.\./\.\./\.\.": a lowercase RFC 1123 label',
    ):
        ex.submit(escape, cwd=str(tmp_path))
    with pytest.raises(ConfigError, match=r"'\.\.' is not a valid job namespace or name here"):
        homes.job_dir(ex.home, "..", "home")
    job = L.trainjob("x", "pass")
    job.spec.trainer.command = ["no-such-tool", "--flag"]  # type: ignore[union-attr]
    with pytest.raises(ConfigError, match="command 'no-such-tool' not found"):
        ex.submit(job)
    assert ex.states(None) == []
    ex.submit(L.trainjob("x", "pass"), cwd=str(tmp_path))
    with pytest.raises(
        AlreadyExistsError, match=r'trainjobs\.trainer\.kubeflow\.org "x" already exists'
    ):
        ex.submit(L.trainjob("x", "pass"), cwd=str(tmp_path))


def test_a_container_without_a_command_says_how_to_fix_it(ex: LocalExecutor) -> None:
    job = L.trainjob("nocmd", "pass")
    job.spec.trainer.command = None  # type: ignore[union-attr]
    with pytest.raises(ConfigError) as err:
        ex.submit(job)
    assert 'container "node" of job "node" has no command' in str(err.value)
    assert "spec.trainer.command" in str(err.value)


def test_follow_streams_lines_as_they_are_written(ex: LocalExecutor, tmp_path: Path) -> None:
    code = textwrap.dedent(
        """
        import os, time
        for i in range(3):
            print('line', i)
            while not os.path.exists(f'ack{i}'):
                time.sleep(0.02)
        """
    )
    ex.submit(L.trainjob("stream", code), cwd=str(tmp_path))
    seen = []
    for line in ex.logs("stream", follow=True):
        seen.append(line)
        (tmp_path / f"ack{len(seen) - 1}").touch()
    assert seen == ["line 0", "line 1", "line 2"]
    assert ex.wait("stream", timeout=TIMEOUT).phase == "Complete"


@pytest.fixture
def tiny_disk(tmp_path: Path):  # type: ignore[no-untyped-def]
    """A 1 MiB tmpfs (needs root: mount); skips where it cannot be mounted."""
    where = tmp_path / "tiny"
    where.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(where)], capture_output=True
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode().strip()}")
    yield where
    subprocess.run(["umount", "-l", str(where)], check=False)


def test_a_full_disk_fails_the_job_with_a_reason_and_delete_frees_it(
    tiny_disk: Path, tmp_path: Path
) -> None:
    ex = LocalExecutor(tiny_disk)
    ex.apply_runtime(L.runtime())
    code = "for i in range(100_000): print('x' * 100, i)"
    ex.submit(L.trainjob("fills", code), cwd=str(tmp_path))
    s = _wait_for(lambda: (st := ex.state("fills")).finished and st, what="Failed")
    assert s.phase == "Failed"
    # Whichever noticed first (the worker's log write or the supervisor's store write), the
    # reason names the full disk, and no pod is left Running.
    said = [s.message, *(p.message for p in s.pods), *(e.message for e in ex.events("fills"))]
    assert any(f"no space left on the disk of {tiny_disk}" in m for m in said), said
    assert [p.phase for p in s.pods] == ["Failed"]
    assert [c.type for c in ex.get("fills").status.conditions or ()] == ["Failed"]  # type: ignore[union-attr]
    with pytest.raises(ConfigError, match=r"cannot write the job store .*disk is full"):
        ex.submit(L.trainjob("more", "pass"), cwd=str(tmp_path))
    ex.delete("fills")
    assert ex.states(None) == []
    ex.submit(L.trainjob("more", "print('room again')"), cwd=str(tmp_path))
    assert ex.wait("more", timeout=TIMEOUT).phase == "Complete"
    assert list(ex.logs("more")) == ["room again"]


def test_follow_goes_on_with_the_new_log_when_the_jobset_restarts(tmp_path: Path) -> None:
    ex = LocalExecutor(tmp_path / "home")
    ex.apply_runtime(L.runtime("retry", failure_policy={"maxRestarts": 1}))
    code = "import os, sys; print('attempt', os.environ['ATTEMPT']); sys.exit(int(os.environ['ATTEMPT']) == 0)"
    ex.submit(L.trainjob("again", code, runtime="retry"), cwd=str(tmp_path))
    assert list(ex.logs("again", follow=True)) == ["attempt 0", "attempt 1"]
    assert ex.wait("again", timeout=TIMEOUT).restarts == 1
    assert list(ex.logs("again")) == ["attempt 1"]


def test_a_port_in_use_fails_the_job_with_what_the_worker_said(
    ex: LocalExecutor, tmp_path: Path
) -> None:
    import socket

    with socket.create_server(("", 0)) as taken:
        port = taken.getsockname()[1]
        code = f"import socket; socket.socket().bind(('', {port}))"
        ex.submit(L.trainjob("port", code), cwd=str(tmp_path))
        s = ex.wait("port", phases={"Failed"}, timeout=TIMEOUT)
    assert s.reason == "FailedJobs"
    assert s.pods[0].message == (
        'container "node" failed: exit code 1; its log says: '
        "OSError: [Errno 98] Address already in use"
    )


def test_suspend_stops_pods_that_ignore_sigterm_together(ex: LocalExecutor, tmp_path: Path) -> None:
    # Each pod gets SIGTERM, then SIGKILL after one grace period (3 s) for all of them: four
    # pods one after another (12 s) outlasted suspend's wait (10 s) and it returned Running.
    code = textwrap.dedent(
        """
        import os, signal, time
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        open('up-' + os.environ['INDEX'], 'w').close()
        time.sleep(600)
        """
    )
    ex.submit(L.trainjob("stubborn", code, nodes=4), cwd=str(tmp_path))
    _wait_for(lambda: len(list(tmp_path.glob("up-*"))) == 4, what="4 pods up")
    ex.suspend("stubborn")
    s = ex.state("stubborn")
    assert s.phase == "Suspended"
    assert [p.phase for p in s.pods] == ["Pending"] * 4


# A server that takes its time to listen, and a trainer that needs it: dependsOn Ready must wait
# for the readiness probe, not for the process to start.
SLOW_SERVER = textwrap.dedent(
    """
    import os, socket, time
    time.sleep(2)
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", int(os.environ["PORT"]))); s.listen()
    print("listening", flush=True)
    while True:
        c, _ = s.accept(); c.sendall(b"hello from the server"); c.close()
    """
)
CLIENT = (
    "import os, socket; s = socket.create_connection(('127.0.0.1', int(os.environ['PORT'])));"
    " print(s.recv(100).decode())"
)


def _runtime_with_server(
    name: str, probe: dict[str, object], *, in_order: bool = False
) -> ClusterTrainingRuntime:
    """``server`` then ``node``; node waits for server by dependsOn Ready, or by startupPolicy."""
    data = L.runtime(name).to_dict()
    jobs = data["spec"]["template"]["spec"]["replicatedJobs"]
    server = {
        "name": "server",
        "template": {
            "spec": {
                "template": {
                    "spec": {
                        "containers": [
                            {
                                "name": "server",
                                "image": "python:3.11",
                                "command": [sys.executable, "-c", SLOW_SERVER],
                                "env": [{"name": "PORT", "value": "8080"}],
                                "ports": [{"name": "http", "containerPort": 8080}],
                                "readinessProbe": probe,
                            }
                        ]
                    }
                }
            }
        },
    }
    if in_order:
        data["spec"]["template"]["spec"]["startupPolicy"] = {"startupPolicyOrder": "InOrder"}
    else:
        jobs[0]["dependsOn"] = [{"name": "server", "status": "Ready"}]
    data["spec"]["template"]["spec"]["replicatedJobs"] = [server, *jobs]
    data["spec"]["template"]["spec"]["successPolicy"] = {
        "operator": "All",
        "targetReplicatedJobs": ["node"],
    }
    obj = parse(data)
    assert isinstance(obj, ClusterTrainingRuntime)
    return obj


TCP_PROBE = {"tcpSocket": {"port": "http"}, "periodSeconds": 1}


@pytest.mark.parametrize(
    ("probe", "in_order"),
    [
        (TCP_PROBE, False),
        (
            {
                "exec": {
                    "command": [
                        sys.executable,
                        "-c",
                        "import socket, sys; host, port = sys.argv[1].split(':');"
                        " socket.create_connection((host, int(port)))",
                        "localhost:8080",  # the pod's own port: mapped like its command's
                    ]
                },
                "periodSeconds": 1,
            },
            False,
        ),
        (TCP_PROBE, True),
    ],
    ids=["dependsOn-tcpSocket", "dependsOn-exec", "startupPolicy-InOrder"],
)
def test_a_job_waiting_for_ready_waits_for_the_readiness_probe(
    tmp_path: Path, probe: dict[str, Any], in_order: bool
) -> None:
    ex = LocalExecutor(tmp_path / "home")
    ex.apply_runtime(_runtime_with_server("served", probe, in_order=in_order))
    ex.submit(
        L.trainjob("ready", CLIENT, runtime="served", env={"PORT": "8080"}), cwd=str(tmp_path)
    )
    s = ex.wait("ready", timeout=TIMEOUT)
    assert s.phase == "Complete", (s.reason, s.message)
    # The client connects once, without retrying: it ran only after the server listened.
    assert list(ex.logs("ready")) == ["hello from the server"]
    assert list(ex.logs("ready", job="server")) == ["listening"]
    server, node = s.pod("server"), s.pod("node")
    assert server and node and server.started and node.started
    assert node.started > server.started  # 2 s of sleep between them
    unhealthy = [e for e in ex.events("ready") if e.reason == "Unhealthy"]
    assert unhealthy and unhealthy[0].involved_name == server.name
    assert unhealthy[0].message.startswith("Readiness probe failed: ")


def test_a_failing_liveness_probe_kills_the_container_and_fails_the_job(tmp_path: Path) -> None:
    ex = LocalExecutor(tmp_path / "home")
    data = L.runtime("live").to_dict()
    ctr = data["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"][
        "spec"
    ]["containers"][0]
    ctr["livenessProbe"] = {
        "exec": {"command": ["test", "-e", "/workspace/alive"]},
        "periodSeconds": 1,
        "failureThreshold": 2,
    }
    ctr["volumeMounts"] = [{"name": "ws", "mountPath": "/workspace"}]
    data["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"][
        "volumes"
    ] = [{"name": "ws", "emptyDir": {}}]
    ex.apply_runtime(parse(data))  # type: ignore[arg-type]
    code = "import time; open('/workspace/alive', 'w').close(); time.sleep(3);" + (
        "import os; os.remove('/workspace/alive'); time.sleep(600)"
    )
    ex.submit(L.trainjob("hung", code, runtime="live"), cwd=str(tmp_path))
    s = ex.wait("hung", phases={"Failed"}, timeout=TIMEOUT)
    pod = s.pods[0]
    assert pod.exit_code in (137, 143)
    assert pod.message.endswith("(Container node failed liveness probe, will be restarted)")
    reasons = [(e.reason, e.involved_kind) for e in ex.events("hung")]
    assert ("Unhealthy", "Pod") in reasons and ("Killing", "Pod") in reasons


def test_the_upstream_dataset_initializer_image_runs_here_before_the_trainer(
    tmp_path: Path,
) -> None:
    """A runtime written for the cluster (initializer image, no command) runs unchanged: the step
    is trainjob's own initializer, fed by spec.initializer.dataset.storageUri."""
    ex = LocalExecutor(tmp_path / "home")
    data = L.runtime("upstream-init", initializer="unused").to_dict()
    init_job = data["spec"]["template"]["spec"]["replicatedJobs"][0]
    (ctr,) = init_job["template"]["spec"]["template"]["spec"]["containers"]
    assert ctr["name"] == "dataset-initializer"
    del ctr["command"]
    ctr["image"] = "ghcr.io/kubeflow/trainer/dataset-initializer:latest"
    ex.apply_runtime(parse(data))  # type: ignore[arg-type]
    source = tmp_path / "corpus"
    (source / "train").mkdir(parents=True)
    (source / "train" / "part-0.jsonl").write_text('{"text": "hello"}\n')
    code = "print(open('/workspace/dataset/train/part-0.jsonl').read().strip())"
    job = L.trainjob(
        "upstream-init",
        code,
        runtime="upstream-init",
        initializer={"dataset": {"storageUri": f"file://{source}"}},
    )
    ex.submit(job, cwd=str(tmp_path))
    s = ex.wait("upstream-init", timeout=TIMEOUT)
    assert s.phase == "Complete", (s.reason, s.message)
    assert list(ex.logs("upstream-init")) == ['{"text": "hello"}']
    init_log = "\n".join(ex.logs("upstream-init", job="dataset-initializer"))
    assert str(source) in init_log  # it says what it copies
