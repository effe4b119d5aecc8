"""Progress on the local backend (KEP-2779): a job's training reports through the status endpoint
its supervisor serves on loopback, with upstream's env in every trainer pod, TLS verified
with the job's own CA; the latest report becomes the TrainJob's ``status.trainerStatus`` and
every value is kept in the metric history.

Reported by ``trainjob.update_trainjob_status``, and by the Kubeflow SDK 0.5.0's own helper,
unchanged, from its own virtual environment (hack/kubeflow-sdk-venv.sh makes it; the test skips
when it cannot be made, saying why). Another job's token, no token, another job's path and a bad
body are refused.
"""

from __future__ import annotations

import json
import ssl
import subprocess
import textwrap
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.e2e import local_jobs as L

from trainjob.core import trainerstatus as ts
from trainjob.local import LocalExecutor

pytestmark = pytest.mark.e2e
REPO = Path(__file__).resolve().parents[2]
TIMEOUT = 120.0

# Three reports 5 s apart (the helper's throttle), then the env the pod saw.
REPORTING = textwrap.dedent(
    """
    import json, os, sys, time
    {import_line}
    sent = []
    for step in (1, 2, 3):
        ok = update_trainjob_status(
            progress_percent=step * 33 + (1 if step == 3 else 0),
            estimated_remaining_seconds=(3 - step) * 5,
            metrics={{"loss": 1.0 / step, "step": step}},
        )
        sent.append(ok)
        if step < 3:
            time.sleep(5.2)
    print("sent", json.dumps(sent))
    print("env", json.dumps({{k: v for k, v in os.environ.items() if k.startswith("KUBEFLOW_")}}))
    """
)


@pytest.fixture
def ex(tmp_path: Path) -> Iterator[LocalExecutor]:
    executor = LocalExecutor(tmp_path / "home")
    executor.apply_runtime(L.runtime(initializer="print('init')"))
    yield executor
    for s in executor.states(None, pods=False):
        executor.delete(s.name, s.namespace)


def _reported(ex: LocalExecutor, name: str) -> None:
    state = ex.wait(name, "default", timeout=TIMEOUT)
    log = "\n".join(ex.logs(name, "default"))
    assert "sent [true, true, true]" in log, log
    env = json.loads(log.split("env ", 1)[1].splitlines()[0])
    assert env[ts.ENV_SERVER_URL].startswith("https://127.0.0.1:")
    assert env[ts.ENV_SERVER_URL].endswith(ts.path("default", name))
    assert Path(env[ts.ENV_CA_CERT]).is_file() and Path(env[ts.ENV_TOKEN]).is_file()
    assert oct(Path(env[ts.ENV_TOKEN]).stat().st_mode & 0o777) == "0o600"
    # the initializer is no trainer: it gets no endpoint (as upstream's plugin)
    init_log = "\n".join(ex.logs(name, "default", job="dataset-initializer"))
    assert "init" in init_log

    progress = state.progress
    assert progress is not None
    assert progress.progress_percentage == 100 and progress.estimated_remaining_seconds == 0
    assert progress.metrics == {"loss": str(1.0 / 3), "step": "3"}
    tj = ex.get(name, "default")
    assert tj.status is not None and tj.status.trainer_status is not None
    assert tj.status.trainer_status.progress_percentage == 100
    assert ex.keeps_metric_history
    history = ex.metric_history(name, "default")
    assert [s.progress_percentage for s in history] == [33, 66, 100]
    assert [s.number("step") for s in history] == [1.0, 2.0, 3.0]
    assert [s.number("loss") for s in history] == [1.0, 0.5, 1.0 / 3]
    assert [s.metrics for s in ex.metric_history(name, "default", since=2)] == [progress.metrics]
    times_ = [s.time for s in history]
    assert times_ == sorted(times_) and all(t.endswith("Z") for t in times_)


def test_update_trainjob_status_reports_progress_and_the_metric_history(
    ex: LocalExecutor, tmp_path: Path
) -> None:
    code = REPORTING.format(import_line="from trainjob import update_trainjob_status")
    ex.submit(L.trainjob("ours", code), cwd=str(tmp_path))
    _reported(ex, "ours")


def test_a_complete_custom_job_s_last_report_is_its_last_call(
    ex: LocalExecutor, tmp_path: Path
) -> None:
    """Training code that reports every step, faster than the 5 s throttle, ends at 100 %: its
    last call, throttled, is sent when the process exits (before: the job stayed Complete at the
    last report 5 s before, 91 % in issue 31's run)."""
    code = textwrap.dedent(
        """
        import time
        from trainjob import update_trainjob_status
        for step in range(1, 11):
            time.sleep(0.1)
            update_trainjob_status(
                progress_percent=10 * step,
                estimated_remaining_seconds=10 - step,
                metrics={"step": step},
            )
        """
    )
    ex.submit(L.trainjob("fast", code), cwd=str(tmp_path))
    state = ex.wait("fast", "default", timeout=TIMEOUT)
    assert state.phase == "Complete"
    history = ex.metric_history("fast", "default")
    assert [s.progress_percentage for s in history] == [10, 100], history
    assert history[-1].metrics == {"step": "10"} and history[-1].estimated_remaining_seconds == 0
    assert state.progress is not None and state.progress.progress_percentage == 100


def _kubeflow_sdk_python() -> str:
    script = REPO / "hack" / "kubeflow-sdk-venv.sh"
    cached = Path.home() / ".cache/trainjob/kubeflow-sdk/kubeflow-0.5.0/bin/python"
    if not script.is_file():
        if cached.is_file():
            return str(cached)
        pytest.skip("hack/kubeflow-sdk-venv.sh is not in this checkout")
    try:
        out = subprocess.run(
            ["bash", str(script)], capture_output=True, text=True, timeout=600, check=True
        )
    except subprocess.CalledProcessError as e:
        pytest.skip(f"kubeflow==0.5.0 could not be installed: {e.stderr[-500:]}")
    return out.stdout.strip().splitlines()[-1]


def test_the_kubeflow_sdks_own_helper_reports_unchanged(ex: LocalExecutor, tmp_path: Path) -> None:
    python = _kubeflow_sdk_python()
    code = REPORTING.format(
        import_line="from kubeflow.trainer.backends.kubernetes.utils import update_trainjob_status"
    )
    script = tmp_path / "report.py"
    script.write_text(code)
    # the trainer runs the SDK's interpreter, as an image with kubeflow installed would
    job = L.trainjob("theirs", "")
    assert job.spec.trainer is not None
    job.spec.trainer.command = [python, str(script)]
    ex.submit(job, cwd=str(tmp_path))
    _reported(ex, "theirs")


def _post(url: str, ca: str, token: str | None, body: bytes) -> tuple[int, dict[str, object]]:
    ctx = ssl.create_default_context(cafile=ca)
    req = urllib.request.Request(url, data=body, method="POST")
    if token is not None:
        req.add_header("Authorization", f"Bearer {token}")
    req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, context=ctx, timeout=10) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def test_only_the_jobs_own_token_and_a_good_body_are_accepted(
    ex: LocalExecutor, tmp_path: Path
) -> None:
    # held for 10 minutes (the fixture deletes them): the endpoints must outlive every post, and
    # 60 s was the whole test's budget on a loaded machine (two jobs' starts, 30 s waits)
    hold = (
        "import os, time; print('url', os.environ['KUBEFLOW_TRAINER_SERVER_URL']); time.sleep(600)"
    )
    for name in ("a", "b"):
        ex.submit(L.trainjob(name, hold), cwd=str(tmp_path))
    env = {}
    home = tmp_path / "home" / "jobs" / "default"
    for name in ("a", "b"):
        ex.wait(name, "default", {"Running"}, timeout=TIMEOUT)
        d = home / name / "status-server"
        deadline = time.monotonic() + 30
        while not (d / "token").is_file() and time.monotonic() < deadline:
            time.sleep(0.1)
        env[name] = (d / "ca.crt", (d / "token").read_text().strip())
    url_a = _pod_url(ex, "a")
    ca_a, token_a = env["a"]
    good = json.dumps(
        {"trainerStatus": {"progressPercentage": 7, "lastUpdatedTime": "2026-01-01T00:00:00Z"}}
    ).encode()
    assert _post(url_a, str(ca_a), token_a, good)[0] == 200
    code, status = _post(url_a, str(ca_a), env["b"][1], good)  # b's token on a's endpoint
    assert code == 403 and status["reason"] == "Forbidden"
    assert _post(url_a, str(ca_a), None, good)[0] == 403
    code, status = _post(url_a.replace("/trainjobs/a/", "/trainjobs/b/"), str(ca_a), token_a, good)
    assert code == 403
    code, status = _post(
        url_a.replace("/namespaces/default/", "/namespaces/x/"), str(ca_a), token_a, good
    )
    assert code == 403
    code, status = _post(
        url_a, str(ca_a), token_a, b'{"trainerStatus": {"progressPercentage": 700}}'
    )
    assert code == 422 and status["reason"] == "Invalid"
    with pytest.raises(urllib.error.URLError):  # b's CA does not vouch for a's server
        urllib.request.urlopen(
            urllib.request.Request(url_a, data=good, method="POST"),
            context=ssl.create_default_context(cafile=str(env["b"][0])),
            timeout=10,
        )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        p = ex.state("a", "default").progress
        if p is not None:
            break
        time.sleep(0.1)
    assert p is not None and p.progress_percentage == 7
    assert ex.state("b", "default").progress is None


def _pod_url(ex: LocalExecutor, name: str) -> str:
    """The status URL the trainer pod of ``name`` was given (it prints it)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        for line in ex.logs(name, "default"):
            if line.startswith("url "):
                return line.split(" ", 1)[1]
        time.sleep(0.1)
    raise AssertionError(f"the pod of {name} printed no {ts.ENV_SERVER_URL}")
