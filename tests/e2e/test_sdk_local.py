"""Every TrainerClient method against real jobs on the local backend (processes on this host).

A plain-Python runtime keeps most jobs fast; the 2-node CustomTrainer runs real
torch.distributed (gloo) through torchrun on the built-in ``torch-distributed`` runtime.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.e2e import sdk_funcs as f

from trainjob import (
    CustomTrainer,
    Labels,
    LocalBackendConfig,
    Name,
    TrainerClient,
)
from trainjob.api.load import parse

pytestmark = pytest.mark.e2e

PLAIN = {
    "apiVersion": "trainer.kubeflow.org/v1alpha1",
    "kind": "ClusterTrainingRuntime",
    "metadata": {"name": "plain-python", "labels": {"trainer.kubeflow.org/framework": "python"}},
    "spec": {
        "mlPolicy": {"numNodes": 1},
        "template": {
            "spec": {
                "replicatedJobs": [
                    {
                        "name": "node",
                        "template": {
                            "metadata": {
                                "labels": {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}
                            },
                            "spec": {
                                "template": {
                                    "spec": {
                                        "containers": [{"name": "node", "image": "python:3.11"}]
                                    }
                                }
                            },
                        },
                    }
                ]
            }
        },
    },
}


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TrainerClient]:
    work = tmp_path / "work"
    work.mkdir()
    c = TrainerClient(
        LocalBackendConfig(home=tmp_path / "home", cwd=str(work), env={"B": "from-config"})
    )
    c.backend.executor.apply_runtime(parse(PLAIN))  # type: ignore[attr-defined]
    yield c
    for job in c.list_jobs():
        c.delete_job(job.name)


def test_runtimes_are_listed_and_read(client: TrainerClient) -> None:
    names = [r.name for r in client.list_runtimes()]
    assert "torch-distributed" in names and "plain-python" in names
    rt = client.get_runtime("torch-distributed")
    assert (rt.trainer.framework, rt.trainer.trainer_type.value) == ("torch", "CustomTrainer")
    with pytest.raises(RuntimeError, match="not found"):
        client.get_runtime("no-such-runtime")


def test_two_node_custom_trainer_runs_torch_distributed(client: TrainerClient) -> None:
    name = client.train(
        runtime="torch-distributed",
        trainer=CustomTrainer(
            func=f.ddp_all_reduce,
            func_args={"epochs": 2},
            num_nodes=2,
            resources_per_node={"cpu": 1},
            env={"MYENV": "a b"},
        ),
    )
    assert len(name) == 12
    job = client.wait_for_job_status(name, timeout=300, polling_interval=1)
    assert job.status == "Complete"
    assert job.num_nodes == 2
    assert [(s.name, s.status, s.device) for s in job.steps] == [
        ("node-0", "Succeeded", "cpu"),
        ("node-1", "Succeeded", "cpu"),
    ]
    assert "rank 0/2 sum=3.0 epochs=2" in list(client.get_job_logs(name))
    node1 = list(client.get_job_logs(name, step="node-1"))
    assert "rank 1/2 sum=3.0 epochs=2" in node1
    assert "PATH set=True MYENV=a b" in node1
    # the same words as on a cluster (tests/unit/client/test_kubernetes_backend.py)
    with pytest.raises(ValueError, match=r"has no step node-2: it has 2 nodes \(node-0..node-1\)"):
        list(client.get_job_logs(name, step="node-2"))
    with pytest.raises(
        ValueError, match=r"has no step dataset-initializer \(steps: node-0, node-1\)"
    ):
        list(client.get_job_logs(name, step="dataset-initializer", follow=True))
    assert [(j.name, j.status) for j in client.list_jobs()] == [(name, "Complete")]
    reasons = [e.reason for e in client.get_job_events(name)]
    assert "AllJobsCompleted" in reasons


def test_follow_yields_lines_as_they_are_written(client: TrainerClient) -> None:
    name = client.train(
        runtime="plain-python",
        # 3 s apart: the first line must arrive before the last is written, however slow a
        # loaded machine's follower is to look
        trainer=CustomTrainer(func=f.slow_lines, func_args={"n": 3, "pause": 3.0}),
    )
    arrivals = []
    for line in client.get_job_logs(name, follow=True):
        arrivals.append((time.time(), line))
    assert [ln for _, ln in arrivals] == [ln for _, ln in arrivals if ln.startswith("line ")]
    assert len(arrivals) == 3
    # lines arrive as they are printed: the first before the last one is even written
    written = [float(ln.split(" at ")[1]) for _, ln in arrivals]
    assert arrivals[0][0] < written[2]
    # The follow ends with the pod's log (the pod Succeeded); the job's Complete comes once its
    # supervisor removed everything the job started, a moment later: waited for, not read at once
    done = client.wait_for_job_status(name, timeout=120, polling_interval=1)
    assert done.status == "Complete"


def test_a_failed_job_raises_at_once_and_is_listed_as_failed(client: TrainerClient) -> None:
    name = client.train(runtime="plain-python", trainer=CustomTrainer(func=f.fail))
    polls: list[str] = []
    # the error says why: the JobSet's verdict, the step and rank that failed first with what
    # its log says, then its last lines
    why = r": jobset failed .*; first failed: node-0 \(rank 0\): .*its log says: boom: training"
    with pytest.raises(RuntimeError, match=f"^TrainJob {name} is Failed{why}") as caught:
        client.wait_for_job_status(
            name, timeout=300, polling_interval=1, callbacks=[lambda j: polls.append(j.status)]
        )
    assert "\nlast lines of node-0's log:\n" in str(caught.value)
    assert str(caught.value).endswith("boom: training failed on purpose")
    assert polls[-1] == "Failed" and "Failed" not in polls[:-1]  # the first Failed poll raises
    assert (
        client.wait_for_job_status(name, {"Failed"}, timeout=10, polling_interval=1).status
        == "Failed"
    )
    assert [(j.name, j.status) for j in client.list_jobs()] == [(name, "Failed")]
    assert any("boom: training failed on purpose" in ln for ln in client.get_job_logs(name))


def test_env_is_merged_into_the_environment_and_config_env_is_overridden(
    client: TrainerClient,
) -> None:
    name = client.train(
        runtime="plain-python", trainer=CustomTrainer(func=f.env_dump, env={"A": "from-trainer"})
    )
    client.wait_for_job_status(name, timeout=120, polling_interval=1)
    assert list(client.get_job_logs(name)) == ["PATH set=True", "A=from-trainer B=from-config"]


def test_hostile_arguments_reach_the_function_unchanged_and_touch_nothing(
    client: TrainerClient, tmp_path: Path
) -> None:
    hostile = "\"; touch pwned; echo '$(touch pwned2)' `touch pwned3` #"
    name = client.train(
        runtime="plain-python", trainer=CustomTrainer(func=f.hello, func_args={"message": hostile})
    )
    client.wait_for_job_status(name, timeout=120, polling_interval=1)
    assert list(client.get_job_logs(name)) == [f"message={hostile}", "cwd_files=[]"]
    assert list((tmp_path / "work").iterdir()) == []


def test_options_name_and_labels_and_waiting_for_running(client: TrainerClient) -> None:
    name = client.train(
        runtime="plain-python",
        options=[Name("my-named-job"), Labels({"team": "ml"})],
        # a minute of lines (deleted once seen Running): a 4 s run could end between two of
        # wait_for_job_status's 1 s polls on a loaded machine, which then never sees Running
        trainer=CustomTrainer(func=f.slow_lines, func_args={"n": 60, "pause": 1.0}),
    )
    assert name == "my-named-job"
    assert client.backend.executor.get(name).metadata.labels == {"team": "ml"}  # type: ignore[attr-defined]
    running = client.wait_for_job_status(name, {"Running"}, timeout=60, polling_interval=1)
    assert running.status == "Running"
    assert running.steps[0].status == "Running"
    client.delete_job(name)
    assert client.list_jobs() == []
    with pytest.raises(RuntimeError, match="not found"):
        client.get_job(name)


def test_unshippable_function_is_refused_before_anything_is_stored(client: TrainerClient) -> None:
    def local_fn() -> int:
        return 1

    with pytest.raises(ValueError, match="Cannot ship"):
        client.train(runtime="plain-python", trainer=CustomTrainer(func=lambda: local_fn()))
    assert client.list_jobs() == []


@pytest.mark.parametrize("by_name", [False, True], ids=["a Runtime", "a runtime name"])
def test_get_runtime_packages_prints_python_and_packages(
    client: TrainerClient, capsys: pytest.CaptureFixture[str], by_name: bool
) -> None:
    runtime = "plain-python" if by_name else client.get_runtime("plain-python")
    client.get_runtime_packages(runtime)
    out = capsys.readouterr().out
    assert "Python: 3." in out
    # pip list's table, or the same from importlib.metadata where the environment has no pip
    assert re.search(r"^Package +Version$", out, re.M) and re.search(r"^pydantic +2\.", out, re.M)
    assert client.list_jobs() == []


def test_in_a_jupyter_kernel_cell_functions_ship_and_progress_updates_one_line(
    tmp_path: Path,
) -> None:
    """A real ipykernel: a function typed in a cell is shipped (its source comes from the cell),
    one that uses a notebook variable is refused, and show_progress updates one display in place."""
    pytest.importorskip("ipykernel")
    manager = pytest.importorskip("jupyter_client.manager")
    env = dict(os.environ, TRAINJOB_HOME=str(tmp_path / "home"), TRAINJOB_BACKEND="local")
    km, kc = manager.start_new_kernel(kernel_name="python3", env=env, cwd=str(tmp_path))
    try:

        def run(code: str) -> list[tuple[str, str, str | None]]:
            msg_id = kc.execute(code)
            out: list[tuple[str, str, str | None]] = []
            while True:
                msg = kc.get_iopub_msg(timeout=300)
                if msg["parent_header"].get("msg_id") != msg_id:
                    continue
                kind, content = msg["msg_type"], msg["content"]
                if kind == "status" and content["execution_state"] == "idle":
                    return out
                if kind == "stream":
                    out.append((kind, content["text"], None))
                elif kind == "error":
                    out.append((kind, f"{content['ename']}: {content['evalue']}", None))
                elif kind in ("display_data", "update_display_data", "execute_result"):
                    did = content.get("transient", {}).get("display_id")
                    out.append((kind, content["data"]["text/plain"], did))

        assert run("from trainjob import TrainerClient, CustomTrainer\nc = TrainerClient()\nc") == [
            ("execute_result", "TrainerClient(backend='local', namespace='default')", None)
        ]
        run("def train(n=2):\n    import time\n    for i in range(n):\n        print('step', i)\n")
        run("def uses_c():\n    return c\n")
        refused = run(
            "try:\n    c.train(trainer=CustomTrainer(func=uses_c))\n"
            "except ValueError as e:\n    print(e)"
        )
        assert "uses names from its module (c)" in refused[0][1]
        out = run(
            "name = c.train(trainer=CustomTrainer(func=train, func_args={'n': 2}))\n"
            "job = c.wait_for_job_status(name, timeout=300, polling_interval=1,"
            " show_progress=True)\n"
            "print(job.status, list(c.get_job_logs(name)))"
        )
        shown = [o for o in out if o[0] in ("display_data", "update_display_data")]
        assert shown[0][0] == "display_data"
        assert all(kind == "update_display_data" for kind, _, _ in shown[1:])
        assert len({did for _, _, did in shown}) == 1  # one output line, updated in place
        assert shown[0][1].startswith("TrainJob ") and not shown[0][1].startswith("'")
        assert shown[-1][1].split(", ")[0].endswith(": Complete")
        assert out[-1] == ("stream", "Complete ['step 0', 'step 1']\n", None)
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
