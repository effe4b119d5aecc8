"""The faults: what a hostile or unlucky user does to a running system. Each is survived (nothing
lost, nothing left running, one clear line where the user must act) or raises ``Failed`` saying
what was not. They use only what every version of trainjob has (the executor, the CLI, the SDK,
the initializers' ``fetch``), so the same list measures the code before and after issue 11.
"""

from __future__ import annotations

import base64
import contextlib
import os
import signal
import socket
import sqlite3
import ssl
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from tests.e2e import local_jobs as L
from tests.e2e.hostile_jobs import CLEARED_POD, POD, ROLES
from tests.redteam.cases import Case, Failed, Outcome, Verdict, cli, environment

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 90.0


def ok(detail: str = "") -> Outcome:
    return Outcome(Verdict.SURVIVED, detail)


def check(cond: object, what: str) -> None:
    if not cond:
        raise Failed(what)


# -- helpers ----------------------------------------------------------------------------------


def _start_time(pid: int) -> str | None:
    try:
        stat_ = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    rest = stat_[stat_.rindex(")") + 2 :].split()
    return None if rest[0] in ("Z", "X") else rest[19]


def _executor(work: Path) -> Any:
    from trainjob.local import LocalExecutor

    ex = LocalExecutor(work / "home")
    ex.apply_runtime(L.runtime())
    return ex


def _pids(ex: Any, name: str, pods: int = 2) -> dict[int, str]:
    """The processes the hostile job printed (all but the fork's middle), with start times."""
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        found: dict[int, str] = {}
        roles = 0
        for index in range(pods):
            for line in ex.logs(name, index=index):
                if line.startswith("PID "):
                    _, role, pid = line.split()
                    roles += 1
                    token = _start_time(int(pid))
                    if token and role != "setsid":
                        found[int(pid)] = token
        if roles >= pods * len(ROLES):
            return found
        time.sleep(0.1)
    raise Failed("the hostile job's processes did not all start")


def _left(found: dict[int, str], settle: float = 2.0) -> list[int]:
    deadline = time.monotonic() + settle
    while True:
        left = [pid for pid, token in found.items() if _start_time(pid) == token]
        if not left or time.monotonic() >= deadline:
            return left
        time.sleep(0.05)


def _kill(pids: list[int]) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def _hostile(work: Path, name: str, **spec: Any) -> tuple[Any, dict[int, str]]:
    ex = _executor(work)
    env = spec.pop("env", None)
    ex.submit(L.trainjob(name, POD, nodes=2, env=env, **spec), cwd=str(work))
    return ex, _pids(ex, name)


def _survived(found: dict[int, str], after: str) -> Outcome:
    left = _left(found)
    _kill(left)
    check(not left, f"{len(left)} of the job's {len(found)} processes outlived it {after}")
    return ok()


# -- class 1: nothing outlives its job ---------------------------------------------------------


def delete_ends_everything(work: Path) -> Outcome:
    ex, found = _hostile(work, "deleted")
    ex.delete("deleted")
    return _survived(found, "after delete")


def deadline_ends_everything(work: Path) -> Outcome:
    ex, found = _hostile(work, "late", activeDeadlineSeconds=6)
    s = ex.wait("late", phases={"Failed"}, timeout=TIMEOUT)
    check(s.reason == "DeadlineExceeded", f"the job ended {s.reason}, not DeadlineExceeded")
    return _survived(found, "after its deadline")


def failure_ends_everything(work: Path) -> Outcome:
    ex, found = _hostile(work, "broken", env={"FAIL_AFTER": "3"})
    ex.wait("broken", phases={"Failed"}, timeout=TIMEOUT)
    return _survived(found, "after it failed")


def suspend_stops_everything(work: Path) -> Outcome:
    ex, found = _hostile(work, "paused")
    ex.suspend("paused")
    out = _survived(found, "while it was suspended")
    ex.delete("paused")
    return out


def killed_supervisor_leaves_nothing(work: Path) -> Outcome:
    ex, found = _hostile(work, "orphaned")
    row = ex.store.job("default", "orphaned")
    os.kill(row.supervisor_pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while _start_time(row.supervisor_pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    s = ex.state("orphaned")
    check(s.phase == "Failed", f"the job is {s.phase} after its supervisor died")
    out = _survived(found, "its killed supervisor")
    ex.delete("orphaned")
    return out


def killed_supervisor_leaves_no_daemon_without_a_mark(work: Path) -> Outcome:
    """As above, but the daemons cleared their environment (no owner mark): the supervisor's
    record of them, not the mark, must say whose they are once it is gone."""
    ex = _executor(work)
    ex.submit(L.trainjob("unmarked", CLEARED_POD, nodes=2), cwd=str(work))
    found = _pids(ex, "unmarked")
    time.sleep(1.5)  # the supervisor looks at its pods' trees every half second
    row = ex.store.job("default", "unmarked")
    os.kill(row.supervisor_pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while _start_time(row.supervisor_pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    s = ex.state("unmarked")
    check(s.phase == "Failed", f"the job is {s.phase} after its supervisor died")
    out = _survived(found, "its killed supervisor (daemons without the mark)")
    ex.delete("unmarked")
    return out


# -- class 5: streamed logs ---------------------------------------------------------------------


def logs_of_200_mb_stay_small(work: Path) -> Outcome:
    ex = _executor(work)
    ex.submit(L.trainjob("chatty", "print('start')"), cwd=str(work))
    ex.wait("chatty", timeout=TIMEOUT)
    log = ex.log_path("chatty")
    line = b"step %08d loss 0.1234 " + b"x" * 80 + b"\n"
    with log.open("ab") as f:
        for i in range(2_000_000):  # 200 MB
            f.write(line % i)
    env = {**os.environ, "TRAINJOB_HOME": str(work / "home")}
    env.pop("TRAINJOB_BACKEND", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "trainjob", "logs", "chatty"], env=env, stdout=subprocess.DEVNULL
    )
    _, status, usage = os.wait4(proc.pid, 0)
    check(os.waitstatus_to_exitcode(status) == 0, "trainjob logs failed")
    rss_mb = usage.ru_maxrss // 1024
    ex.delete("chatty")
    check(rss_mb < 200, f"trainjob logs took {rss_mb} MB of memory for a 200 MB log")
    return ok(f"{rss_mb} MB")


def followed_endless_line_stays_small(work: Path) -> Outcome:
    """``logs -f`` of a log that is one 200 MB line (a progress bar redrawn with ``\\r``, never a
    newline): in bounded memory and time, every byte printed."""
    ex = _executor(work)
    ex.submit(L.trainjob("bar", "print('start')"), cwd=str(work))
    ex.wait("bar", timeout=TIMEOUT)
    log = ex.log_path("bar")
    piece = b"\r 42%|####      | 420/1000 [00:42<00:58, 10.00it/s]" + b" " * 46
    with log.open("ab") as f:
        for _ in range(2_000_000):  # 200 MB without a newline
            f.write(piece)
    size = log.stat().st_size
    env = {**os.environ, "TRAINJOB_HOME": str(work / "home")}
    env.pop("TRAINJOB_BACKEND", None)
    out = work / "followed"
    with out.open("wb") as sink:
        proc = subprocess.Popen(
            [sys.executable, "-m", "trainjob", "logs", "-f", "bar"], env=env, stdout=sink
        )
        deadline = time.monotonic() + 60
        while not (got := os.wait4(proc.pid, os.WNOHANG))[0] and time.monotonic() < deadline:
            time.sleep(0.1)
        if not got[0]:
            proc.kill()
            got = os.wait4(proc.pid, 0)
        _, status, usage = got
        proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
    ex.delete("bar")
    check(os.waitstatus_to_exitcode(status) == 0, "trainjob logs -f did not end within 60 s")
    rss_mb = usage.ru_maxrss // 1024
    check(rss_mb < 200, f"trainjob logs -f took {rss_mb} MB of memory for a 200 MB line")
    printed = out.stat().st_size
    check(printed >= size, f"trainjob logs -f printed {printed} bytes of {size}")
    return ok(f"{rss_mb} MB")


# -- class 6: the store -------------------------------------------------------------------------


def _stored_job(home: Path, name: str) -> None:
    from trainjob.local.state import store

    s = store.Store(home / "trainjob.db")
    s.insert_job(
        store.JobRow(
            namespace="default", name=name, uid=f"uid-{name}", created="2026-01-01T00:00:00Z",
            created_ts=1.0, trainjob=L.trainjob(name, "print(1)").model_dump_json(by_alias=True),
            runtime="{}", plan="[]", cwd="/", phase="Complete",
        )
    )  # fmt: skip
    s.close()


def _one_line(res: Any, what: str) -> None:
    check("Traceback" not in res.err, f"{what}: a traceback")
    check(res.code == 1, f"{what}: exit code {res.code}")
    check(res.err.count("\n") == 1 and res.err.startswith("error: "), f"{what}: {res.err!r}")


def _damaged(damage: Callable[[Path], object]) -> Callable[[Path], Outcome]:
    def run(work: Path) -> Outcome:
        home = work / "home"
        _stored_job(home, "one")
        for suffix in ("-wal", "-shm"):
            with contextlib.suppress(FileNotFoundError):
                (home / f"trainjob.db{suffix}").unlink()
        damage(home / "trainjob.db")
        res = cli(["get", "jobs"], home)
        _one_line(res, "get jobs on a damaged store")
        return ok(res.err.strip())

    return run


def held_lock_lets_reads_through(work: Path) -> Outcome:
    home = work / "home"
    _stored_job(home, "one")
    holder = sqlite3.connect(home / "trainjob.db", isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        res = cli(["get", "jobs"], home)
        check(res.code == 0 and "one" in res.out, f"get jobs beside a held lock: {res.err!r}")
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    return ok()


def bad_row_hides_nothing(work: Path) -> Outcome:
    home = work / "home"
    for name in ("first", "broken", "last"):
        _stored_job(home, name)
    with sqlite3.connect(home / "trainjob.db") as con:
        con.execute("UPDATE jobs SET trainjob = '{not json' WHERE name = 'broken'")
    res = cli(["get", "jobs"], home)
    check("Traceback" not in res.err, "get jobs with a bad row: a traceback")
    names = [r.split()[0] for r in res.out.splitlines()[1:]]
    check(names == ["first", "last"], f"get jobs with a bad row listed {names}: {res.err!r}")
    gone = cli(["delete", "broken"], home)
    check(gone.code == 0, f"delete of the bad row: {gone.err!r}")
    return ok()


def home_is_a_file(work: Path) -> Outcome:
    home = work / "home"
    home.write_text("x")
    _one_line(cli(["get", "jobs"], home), "a home that is a file")
    return ok()


def home_under_proc(work: Path) -> Outcome:
    _one_line(cli(["get", "jobs"], Path("/proc/trainjob-home")), "a home under /proc")
    return ok()


def read_only_home(work: Path) -> Outcome:
    home = work / "home"
    _stored_job(home, "one")
    job = work / "job.yaml"
    job.write_text(L.trainjob("two", "print(1)", runtime="torch-distributed").model_dump_json())
    env = {**os.environ, "TRAINJOB_HOME": str(home)}
    env.pop("TRAINJOB_BACKEND", None)
    prefix: list[str] = []
    if os.geteuid() == 0:
        prefix = [
            "unshare",
            "-m",
            "sh",
            "-c",
            f'mount --bind -o ro "{home}" "{home}" && exec "$@"',
            "sh",
        ]
    else:
        home.chmod(0o555)

    def trainjob(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*prefix, sys.executable, "-m", "trainjob", *args],
            env=env, capture_output=True, text=True, timeout=120,
        )  # fmt: skip

    try:
        listed = trainjob("get", "jobs")
        check(listed.returncode == 0 and "one" in listed.stdout, f"get jobs: {listed.stderr!r}")
        ran = trainjob("run", "-f", str(job))
        check("Traceback" not in ran.stderr, "run on a read-only home: a traceback")
        check(ran.returncode == 1 and ran.stderr.count("\n") == 1, f"run: {ran.stderr!r}")
    finally:
        if not prefix:
            home.chmod(0o700)
    return ok()


# -- class 7: local file safety -----------------------------------------------------------------


def loose_home_is_tightened(work: Path) -> Outcome:
    home = work / "home"
    home.mkdir(mode=0o755)
    os.chmod(home, 0o755)
    ex = _executor(work)
    ex.submit(L.trainjob("tight", "print('done')"), cwd=str(work))
    ex.wait("tight", timeout=TIMEOUT)
    loose = [
        str(p) for p in [home, *home.rglob("*")]
        if not p.is_symlink() and stat.S_IMODE(p.lstat().st_mode) & 0o077
    ]  # fmt: skip
    ex.delete("tight")
    check(not loose, f"readable by other users: {loose[:3]}")
    return ok()


def planted_link_is_not_followed(work: Path) -> Outcome:
    home = work / "home"
    victim = work / "victim"
    (victim / "planted").mkdir(parents=True)
    (victim / "planted" / "precious.txt").write_text("keep")
    ex = _executor(work)
    (home / "jobs").mkdir(exist_ok=True)
    (home / "jobs" / "default").symlink_to(victim)
    with contextlib.suppress(Exception):
        ex.submit(L.trainjob("planted", "print('done')"), cwd=str(work))
    with contextlib.suppress(Exception):
        ex.delete("planted")
    check((victim / "planted" / "precious.txt").exists(), "a file the planted link led to is gone")
    return ok()


def delete_through_link_keeps_target(work: Path) -> Outcome:
    home = work / "home"
    ex = _executor(work)
    ex.submit(L.trainjob("linked", "print('done')"), cwd=str(work))
    ex.wait("linked", timeout=TIMEOUT)
    victim = work / "victim"
    (victim / "linked").mkdir(parents=True)
    (victim / "linked" / "precious.txt").write_text("keep")
    (home / "jobs" / "default").rename(home / "jobs" / "moved")
    (home / "jobs" / "default").symlink_to(victim)
    ex.delete("linked")
    check((victim / "linked" / "precious.txt").exists(), "delete removed what a link pointed to")
    return ok()


def store_link_is_refused(work: Path) -> Outcome:
    home = work / "home"
    home.mkdir()
    elsewhere = work / "elsewhere.db"
    (home / "trainjob.db").symlink_to(elsewhere)
    res = cli(["get", "jobs"], home)
    check(not elsewhere.exists(), "the store was created through a link")
    _one_line(res, "a store that is a link")
    return ok()


def secret_volume_files_are_private(work: Path) -> Outcome:
    from trainjob.local.job import pods, volumes
    from trainjob.runtime.plan import Plan

    plan = Plan(({"kind": "Secret", "metadata": {"name": "ssh"}, "data": {"id_rsa": base64.b64encode(b"K").decode()}},))  # fmt: skip
    spec = {"containers": [{"name": "n"}], "volumes": [{"name": "ssh", "secret": {"secretName": "ssh", "defaultMode": 0o640}}]}  # fmt: skip
    pod = pods.PodTemplate("node", 0, 0, "h", "h-x", {}, {}, spec)
    root = work / "job" / "volumes"
    root.parent.mkdir(parents=True)
    volumes.materialize(pod, plan, root)
    mode = stat.S_IMODE((root / "ssh" / "id_rsa").stat().st_mode)
    check(mode & 0o077 == 0, f"the MPI key file is {oct(mode)}")
    return ok()


# -- class 8: secrets and leftovers -------------------------------------------------------------

SECRET = "s3cr3t-token-4f9a2"


def train_with_a_token(token: str) -> None:
    import time

    time.sleep(4)
    print("token of", len(token))


def _sdk_job(work: Path) -> tuple[Any, str, Path]:
    from trainjob import CustomTrainer, TrainerClient
    from trainjob.client.config import LocalProcessBackendConfig

    system_tmp = work / "system-tmp"
    system_tmp.mkdir()
    client = TrainerClient(LocalProcessBackendConfig(home=work / "home", cwd=str(work)))
    name = client.train(
        runtime="torch-distributed",
        trainer=CustomTrainer(func=train_with_a_token, func_args={"token": SECRET}),
    )
    return client, name, system_tmp


def func_args_not_in_ps(work: Path) -> Outcome:
    with environment(TMPDIR=str(work / "system-tmp")):
        client, name, _ = _sdk_job(work)
        seen = []
        deadline = time.monotonic() + TIMEOUT
        while time.monotonic() < deadline:
            for entry in os.listdir("/proc"):
                if entry.isdigit():
                    with contextlib.suppress(OSError):
                        if SECRET.encode() in Path(f"/proc/{entry}/cmdline").read_bytes():
                            seen.append(int(entry))
            if client.get_job(name).status in ("Complete", "Failed"):
                break
            time.sleep(0.2)
        client.delete_job(name)
    check(not seen, f"func_args in the command line of {len(set(seen))} process(es)")
    return ok()


def no_leftovers_in_temp(work: Path) -> Outcome:
    with environment(TMPDIR=str(work / "system-tmp")):
        client, name, system_tmp = _sdk_job(work)
        client.wait_for_job_status(name, timeout=int(TIMEOUT))
        client.delete_job(name)
    left = sorted(p.name for p in system_tmp.iterdir())
    check(not left, f"left in the system temp dir after delete: {left}")
    return ok()


# -- class 9: the webhook server ----------------------------------------------------------------


@contextlib.contextmanager
def _webhook_server(work: Path) -> Iterator[tuple[int, ssl.SSLContext, int]]:
    env = {
        "REQUEST_TIMEOUT": "3", "HANDSHAKE_TIMEOUT": "3", "PATH": "/usr/bin:/bin",
        "PYTHONPATH": f"{ROOT}:{ROOT / 'src'}",
    }  # fmt: skip
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.unit.controller.webhook_server", str(work)],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        port = int(proc.stdout.readline().split()[1])
        yield port, ssl.create_default_context(cafile=str(work / "ca.crt")), proc.pid
    finally:
        proc.kill()
        proc.wait()


def _rss(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


PATH = "/validate-trainer-kubeflow-org-v1alpha1-clustertrainingruntime"


def _review(port: int, ctx: ssl.SSLContext, timeout: float = 10.0) -> float:
    import httpx

    from trainjob.executor import catalog

    rt = catalog.builtin_runtimes()["torch-distributed"].to_dict()
    body = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "request": {"uid": "u", "operation": "CREATE", "object": rt}}  # fmt: skip
    start = time.monotonic()
    with httpx.Client(verify=ctx, timeout=timeout) as c:
        resp = c.post(f"https://localhost:{port}{PATH}", json=body)
    check(resp.status_code == 200 and resp.json()["response"]["allowed"], "a normal review failed")
    return time.monotonic() - start


def _tls(port: int, ctx: ssl.SSLContext) -> ssl.SSLSocket:
    raw = socket.create_connection(("127.0.0.1", port), timeout=20)
    return ctx.wrap_socket(raw, server_hostname="localhost")


def _head(length: str) -> bytes:
    return (
        f"POST {PATH} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n"
        f"Content-Type: application/json\r\nContent-Length: {length}\r\n\r\n"
    ).encode()


def _answer(s: ssl.SSLSocket, timeout: float = 20.0) -> bytes:
    s.settimeout(timeout)
    data = b""
    with contextlib.suppress(OSError):
        while chunk := s.recv(65536):
            data += chunk
    return data


def webhook_oversized_body(work: Path) -> Outcome:
    with _webhook_server(work) as (port, ctx, _):
        with _tls(port, ctx) as s:
            s.sendall(_head(str(9 * 1024 * 1024)))
            answer = _answer(s, 10)
        check(answer.startswith(b"HTTP/1.1 413"), f"an oversized body: {answer[:60]!r}")
        _review(port, ctx)
    return ok()


def webhook_negative_length_stream(work: Path) -> Outcome:
    with _webhook_server(work) as (port, ctx, pid):
        before = _rss(pid)
        with _tls(port, ctx) as s:
            s.sendall(_head("-1"))
            with contextlib.suppress(OSError):
                for _ in range(300):
                    s.sendall(b"x" * (1 << 20))
            _answer(s, 5)
        grown = (_rss(pid) - before) >> 20
        check(grown < 64, f"a 300 MiB stream with Content-Length -1 grew the server by {grown} MiB")
        _review(port, ctx)
    return ok(f"+{grown} MiB")


def webhook_stalled_clients(work: Path) -> Outcome:
    with _webhook_server(work) as (port, ctx, _):
        stalled = []
        try:
            for i in range(150):
                s = _tls(port, ctx)
                s.sendall(b"POST / HTTP/1.1\r\n" if i % 2 else b"P")
                stalled.append(s)
            took = max(_review(port, ctx) for _ in range(3))
        finally:
            for s in stalled:
                s.close()
    check(took < 10.0, f"a normal review took {took:.1f} s beside 150 stalled clients")
    return ok(f"{took:.2f} s")


def webhook_short_body_is_cut(work: Path) -> Outcome:
    with _webhook_server(work) as (port, ctx, _):
        with _tls(port, ctx) as s:
            s.sendall(_head("1000") + b'{"short":')
            start = time.monotonic()
            _answer(s, 30)
            waited = time.monotonic() - start
        _review(port, ctx)
    check(waited < 15, f"a body shorter than its Content-Length held a connection {waited:.0f} s")
    return ok(f"closed after {waited:.1f} s")


def webhook_many_large_bodies(work: Path) -> Outcome:
    with _webhook_server(work) as (port, ctx, pid):
        before = _rss(pid)
        peak = [before]
        done = threading.Event()

        def watch() -> None:
            while not done.is_set():
                peak[0] = max(peak[0], _rss(pid))
                time.sleep(0.02)

        def send() -> None:
            with contextlib.suppress(OSError), _tls(port, ctx) as s:
                s.sendall(_head(str(8 << 20)) + b"x" * (8 << 20))
                _answer(s, 30)

        threads = [
            threading.Thread(target=watch),
            *(threading.Thread(target=send) for _ in range(24)),
        ]
        for t in threads:
            t.start()
        for t in threads[1:]:
            t.join(120)
        done.set()
        threads[0].join()
        _review(port, ctx)
    grown = (peak[0] - before) >> 20
    check(grown < 160, f"24 bodies of 8 MiB at once grew the server by {grown} MiB")
    return ok(f"+{grown} MiB")


def webhook_garbage_body(work: Path) -> Outcome:
    with _webhook_server(work) as (port, ctx, _):
        for body in (b"not json", b"[1, 2]"):
            with _tls(port, ctx) as s:
                s.sendall(_head(str(len(body))) + body)
                answer = _answer(s, 10)
            check(answer.startswith(b"HTTP/1.1 400"), f"{body!r}: {answer[:40]!r}")
    return ok()


# -- class 10: honest messages ------------------------------------------------------------------


def _failed_message(work: Path, code: str) -> tuple[str, str]:
    ex = _executor(work)
    ex.submit(L.trainjob("why", code), cwd=str(work))
    s = ex.wait("why", phases={"Failed"}, timeout=TIMEOUT)
    described = cli(["describe", "job", "why"], work / "home")
    ex.delete("why")
    return s.pods[0].message, described.out


def sigkill_is_the_reason(work: Path) -> Outcome:
    code = "import os, signal; print('step 10 loss 0.25', flush=True); os.kill(os.getpid(), signal.SIGKILL)"
    message, _ = _failed_message(work, code)
    check("SIGKILL" in message and "step 10" not in message, f"the pod says: {message}")
    return ok(message)


def no_escapes_in_status(work: Path) -> Outcome:
    code = "import sys; print('\\x1b[31mValueError: boom\\x1b[0m', flush=True); sys.exit(1)"
    message, described = _failed_message(work, code)
    check("\x1b" not in message and "\x1b" not in described, f"escapes in: {message!r}")
    return ok()


def dead_pods_are_not_ready(work: Path) -> Outcome:
    ex, found = _hostile(work, "orphaned")
    deadline = time.monotonic() + TIMEOUT
    while not all(p.ready for p in ex.state("orphaned").pods) and time.monotonic() < deadline:
        time.sleep(0.1)
    row = ex.store.job("default", "orphaned")
    os.kill(row.supervisor_pid, signal.SIGKILL)
    time.sleep(1)
    pods = ex.state("orphaned").pods
    ex.delete("orphaned")
    _kill(_left(found, 0))
    ready = [p.name for p in pods if p.ready]
    check(not ready, f"pods of a job whose supervisor died are still Ready: {ready}")
    return ok()


# -- class 11: initializers ---------------------------------------------------------------------


@contextlib.contextmanager
def _s3() -> Iterator[tuple[str, Any]]:
    from tests.s3server import moto_s3

    with moto_s3("AKIDTEST", "secret-test") as (endpoint, client):
        yield endpoint, client


def _s3_cfg(endpoint: str, uri: str, out: Path) -> Any:
    from trainjob.initializers import config

    env = {"STORAGE_URI": uri, "OUTPUT_PATH": str(out), "ENDPOINT": endpoint,
           "ACCESS_KEY_ID": "AKIDTEST", "SECRET_ACCESS_KEY": "secret-test"}  # fmt: skip
    return config.from_env(config.Kind.DATASET, env)


def s3_wrong_content_is_fetched(work: Path) -> Outcome:
    from trainjob.initializers.sources import s3

    body = bytes(range(256)) * 64
    with _s3() as (endpoint, client):
        client.create_bucket(Bucket="red-team")
        client.put_object(Bucket="red-team", Key="data.bin", Body=body)
        out = work / "out"
        out.mkdir()
        (out / "data.bin").write_bytes(b"\0" * len(body))
        s3.fetch(_s3_cfg(endpoint, "s3://red-team/data.bin", out))
    check(
        (out / "data.bin").read_bytes() == body,
        "a file of the right size but wrong content was kept",
    )
    return ok()


def s3_partial_download_resumes(work: Path) -> Outcome:
    from trainjob.initializers.sources import s3

    body = bytes(range(256)) * (3 * 4096)
    ranges: list[str] = []
    with _s3() as (endpoint, client):
        client.create_bucket(Bucket="red-team")
        etag = client.put_object(Bucket="red-team", Key="data.bin", Body=body)["ETag"]
        out = work / "out"
        out.mkdir()
        part = out / "data.bin.part"
        part.write_bytes(body[: len(body) // 2])
        (out / "data.bin.part.etag").write_text(etag)  # what an interrupted run leaves
        real = s3.make_client

        def recording(cfg: Any) -> Any:
            c = real(cfg)
            c.meta.events.register(
                "before-parameter-build.s3.GetObject",
                lambda params, **_: ranges.append(params.get("Range", "")),
            )
            return c

        s3.make_client = recording
        try:
            s3.fetch(_s3_cfg(endpoint, "s3://red-team/data.bin", out))
        finally:
            s3.make_client = real
    check((out / "data.bin").read_bytes() == body, "the resumed file is not the object")
    check(any(r.startswith("bytes=") for r in ranges), "the partial download started from zero")
    return ok()


def hf_wrong_content_is_fetched(work: Path) -> Outcome:
    from tests.unit.initializers import fakehub

    out = work / "out"
    with fakehub.serve() as hub:
        env = {**os.environ, "STORAGE_URI": "hf://org/ds", "OUTPUT_PATH": str(out),
               "HF_ENDPOINT": hub.url, "HF_HOME": str(work / "hf-home"), "HF_HUB_DISABLE_TELEMETRY": "1"}  # fmt: skip

        def run() -> None:
            proc = subprocess.run(
                [sys.executable, "-m", "trainjob.initializers.dataset"],
                env=env, capture_output=True, text=True, timeout=120,
            )  # fmt: skip
            check(proc.returncode == 0, f"the initializer failed: {proc.stderr[-300:]}")

        run()
        train = out / "data/train.jsonl"
        want = train.read_bytes()
        st = train.stat()
        train.write_bytes(b"X" * len(want))
        os.utime(train, ns=(st.st_atime_ns, st.st_mtime_ns))
        run()
    check(train.read_bytes() == want, "a present file with other bytes than the Hub's was kept")
    return ok()


def file_wrong_content_is_copied(work: Path) -> Outcome:
    from trainjob.initializers import config
    from trainjob.initializers.sources import file

    src = work / "src"
    src.mkdir()
    (src / "a.bin").write_bytes(b"right" * 100)
    out = work / "out"
    out.mkdir()
    (out / "a.bin").write_bytes(b"wrong" * 100)
    file.fetch(
        config.from_env(config.Kind.DATASET, {"STORAGE_URI": str(src), "OUTPUT_PATH": str(out)})
    )
    check(
        (out / "a.bin").read_bytes() == b"right" * 100, "a present copy with other bytes was kept"
    )
    return ok()


FAULTS: list[tuple[str, int, Callable[[Path], Outcome]]] = [
    ("delete-ends-every-process", 1, delete_ends_everything),
    ("deadline-ends-every-process", 1, deadline_ends_everything),
    ("failure-ends-every-process", 1, failure_ends_everything),
    ("suspend-stops-every-process", 1, suspend_stops_everything),
    ("killed-supervisor-leaves-nothing", 1, killed_supervisor_leaves_nothing),
    (
        "killed-supervisor-leaves-no-unmarked-daemon",
        1,
        killed_supervisor_leaves_no_daemon_without_a_mark,
    ),
    ("logs-of-200-mb-are-streamed", 5, logs_of_200_mb_stay_small),
    ("logs-f-of-a-200-mb-line-is-streamed", 5, followed_endless_line_stays_small),
    ("store-truncated", 6, _damaged(lambda db: db.write_bytes(db.read_bytes()[:1500]))),
    ("store-garbled", 6, _damaged(lambda db: db.write_bytes(b"garbage" * 1000))),
    (
        "store-pages-overwritten",
        6,
        _damaged(lambda db: db.write_bytes(db.read_bytes()[:100] + b"\xff" * 4000)),
    ),
    ("store-held-lock", 6, held_lock_lets_reads_through),
    ("store-bad-row", 6, bad_row_hides_nothing),
    ("store-home-is-a-file", 6, home_is_a_file),
    ("store-home-under-proc", 6, home_under_proc),
    ("store-read-only-home", 6, read_only_home),
    ("files-loose-home-tightened", 7, loose_home_is_tightened),
    ("files-planted-link-not-followed", 7, planted_link_is_not_followed),
    ("files-delete-through-a-link", 7, delete_through_link_keeps_target),
    ("files-store-is-a-link", 7, store_link_is_refused),
    ("files-secret-volume-private", 7, secret_volume_files_are_private),
    ("secrets-func-args-not-in-ps", 8, func_args_not_in_ps),
    ("secrets-no-temp-leftovers", 8, no_leftovers_in_temp),
    ("webhook-oversized-body", 9, webhook_oversized_body),
    ("webhook-negative-length-stream", 9, webhook_negative_length_stream),
    ("webhook-stalled-clients", 9, webhook_stalled_clients),
    ("webhook-short-body", 9, webhook_short_body_is_cut),
    ("webhook-many-large-bodies", 9, webhook_many_large_bodies),
    ("webhook-garbage-body", 9, webhook_garbage_body),
    ("messages-sigkill-is-the-reason", 10, sigkill_is_the_reason),
    ("messages-no-escapes", 10, no_escapes_in_status),
    ("messages-dead-pods-not-ready", 10, dead_pods_are_not_ready),
    ("init-s3-wrong-content", 11, s3_wrong_content_is_fetched),
    ("init-s3-resume", 11, s3_partial_download_resumes),
    ("init-hf-wrong-content", 11, hf_wrong_content_is_fetched),
    ("init-file-wrong-content", 11, file_wrong_content_is_copied),
]


def cases() -> list[Case]:
    return [Case(f"fault-{name}", cls, "fault", run) for name, cls, run in FAULTS]
