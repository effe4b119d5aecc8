"""The examples on the local backend: real DDP through torchrun, real mpirun, and the CLI.

``examples/torch-ddp.yaml`` (2 nodes x 2 processes, gloo), ``examples/mpi-hello.yaml`` (OpenMPI,
4 ranks) and ``examples/llm-lora.yaml`` (initializers + LoRA on the torchtune runtime, its tiny model
and data made by ``python -m trainjob.trainers.llm.demo``) run exactly as a user runs them, from the
repository root.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from tests.e2e import local_jobs as L

from trainjob.api.load import load_file, parse
from trainjob.api.trainer import TrainJob
from trainjob.local import LocalExecutor

pytestmark = pytest.mark.e2e
ROOT = Path(__file__).parents[2]


def _example(name: str) -> TrainJob:
    (tj,) = load_file(ROOT / "examples" / name)
    assert isinstance(tj, TrainJob)
    return tj


@pytest.mark.skipif(
    importlib.util.find_spec("torch") is None, reason="needs torch (the torch extra)"
)
def test_torch_ddp_example_all_reduces_on_every_rank_and_completes(tmp_path: Path) -> None:
    ex = LocalExecutor(tmp_path / "home")
    for _attempt in range(3):
        if _attempt:
            ex.delete("torch-ddp")
        ex.submit(_example("torch-ddp.yaml"), cwd=str(ROOT / "examples"))
        s = ex.wait("torch-ddp", timeout=600)
        if s.phase == "Complete":
            break
        # torch 2.15's gloo worker threads can abort a finished DDP run at interpreter exit
        # (src/trainjob/trainers/gloo_exit.py; the example waits for them at exit): should it
        # still happen, only that failure is run again.
        said = "\n".join(line for i in (0, 1) for line in ex.logs("torch-ddp", index=i))
        assert "terminate called without an active exception" in said, said
    assert s.phase == "Complete"
    logs = {i: list(ex.logs("torch-ddp", index=i)) for i in (0, 1)}
    # torchrun gives node 0 global ranks 0-1 and node 1 ranks 2-3.
    for node, ranks in ((0, (0, 1)), (1, (2, 3))):
        for rank in ranks:
            assert f"allreduce ok rank={rank} sum=6 world=4" in logs[node]
    losses = [
        float(m.group(1)) for line in logs[0] if (m := re.match(r"epoch \d/3 loss (\S+)", line))
    ]
    assert len(losses) == 3 and losses[-1] < losses[0]
    assert logs[0][-1] == "done: y = 3.00x - 1.00"


@pytest.mark.skipif(
    shutil.which("mpirun") is None or importlib.util.find_spec("mpi4py") is None,
    reason="needs OpenMPI (scripts/setup-local.sh) and mpi4py (the torch extra)",
)
def test_mpi_example_runs_every_rank_through_mpirun(tmp_path: Path) -> None:
    ex = LocalExecutor(tmp_path / "home")
    ex.submit(_example("mpi-hello.yaml"), cwd=str(ROOT / "examples"))
    s = ex.wait("mpi-hello", timeout=300)
    lines = list(ex.logs("mpi-hello", job="launcher"))
    assert sorted(line.split(" on ")[0] for line in lines if line.startswith("hello")) == [
        f"hello from rank {r} of 4" for r in range(4)
    ]
    assert "allreduce ok sum=6 size=4" in lines
    node = s.pod("node")
    assert node is not None and node.message.startswith("not run locally")
    hostfile = ex.home / "jobs/default/mpi-hello/volumes/mpi-hostfile/hostfile"
    assert hostfile.read_text() == "localhost slots=4\n"


def _cli(home: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TRAINJOB_HOME": str(home)}
    return subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from trainjob.cli import main; sys.exit(main())",
            *args,
        ],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_the_cli_runs_lists_describes_logs_and_deletes_a_job(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (tmp_path / "runtime.yaml").write_text(yaml.safe_dump(L.runtime().to_dict()))
    # 5 s: --wait's first look must find the job unfinished to print a progress line (an instant
    # job could be Complete before a loaded machine's CLI first looked; then it prints none)
    code = "import os, time; time.sleep(5); print('hello from', os.environ['INDEX'])"
    job = L.trainjob("cli-job", code, nodes=2)
    (tmp_path / "job.yaml").write_text(yaml.safe_dump(job.to_dict()))

    run = _cli(home, "run", "-f", "job.yaml", "-f", "runtime.yaml", "--wait", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert run.stdout == "trainjob.trainer.kubeflow.org/cli-job created\n"
    assert "trainjob.trainer.kubeflow.org/cli-job Complete" in run.stderr
    # Not a terminal: progress is one line per change of phases, before the final line.
    assert re.search(r"^cli-job: (Created|Running)  node-0 \w+  node-1 \w+$", run.stderr, re.M)

    table = _cli(home, "get", "jobs", cwd=tmp_path).stdout.splitlines()
    assert table[0].split() == [
        "NAME",
        "STATUS",
        "RUNTIME",
        "NODES",
        "RESTARTS",
        "PROGRESS",
        "ETA",
        "AGE",
    ]
    assert table[1].split()[:5] == ["cli-job", "Complete", "plain", "2", "0"]
    assert _cli(home, "get", "jobs", "-o", "name", cwd=tmp_path).stdout == (
        "trainjob.trainer.kubeflow.org/cli-job\n"
    )
    as_yaml = yaml.safe_load(
        _cli(home, "get", "jobs", "cli-job", "-o", "yaml", cwd=tmp_path).stdout
    )
    assert as_yaml["status"]["conditions"][0]["type"] == "Complete"

    described = _cli(home, "describe", "job", "cli-job", cwd=tmp_path).stdout
    for want in (
        "Status:     Complete (AllJobsCompleted)",
        "node-1",
        "AllJobsCompleted",
        "Events:",
    ):
        assert want in described
    # Sections as kubectl describe prints them: headers underlined with dashes.
    lines = described.splitlines()
    for title, headers in (
        ("Conditions:", ["Type", "Status", "Reason", "Message", "LastTransitionTime"]),
        (
            "Steps:",
            ["Step", "Pod", "Phase", "Ready", "ExitCode", "Started", "Finished", "Message"],
        ),
        ("Events:", ["Type", "Reason", "Age", "From", "Message"]),
    ):
        at = lines.index(title)
        assert lines[at + 1].split() == headers
        assert lines[at + 2].split() == ["-" * len(h) for h in headers]

    assert (
        _cli(home, "logs", "cli-job", "--step", "node-1", cwd=tmp_path).stdout == "hello from 1\n"
    )
    assert _cli(home, "logs", "cli-job", cwd=tmp_path).stdout == "hello from 0\n"

    deleted = _cli(home, "delete", "cli-job", cwd=tmp_path)
    assert deleted.stdout == "trainjob.trainer.kubeflow.org/cli-job deleted\n"
    gone = _cli(home, "describe", "job", "cli-job", cwd=tmp_path)
    assert gone.returncode == 1
    assert gone.stderr == 'error: trainjobs.trainer.kubeflow.org "cli-job" not found\n'


def test_the_cli_exits_1_with_the_reason_when_a_job_fails(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (tmp_path / "runtime.yaml").write_text(yaml.safe_dump(L.runtime().to_dict()))
    job = L.trainjob("cli-bad", "raise ValueError('lr must be positive')")
    (tmp_path / "job.yaml").write_text(yaml.safe_dump(job.to_dict()))
    run = _cli(home, "run", "-f", "job.yaml", "-f", "runtime.yaml", "--follow", cwd=tmp_path)
    assert run.returncode == 1
    lines = run.stderr.splitlines()
    at = next(i for i, ln in enumerate(lines) if ln.startswith("error: "))
    head = lines[at]
    assert head.startswith("error: trainjob.trainer.kubeflow.org/cli-bad Failed")
    assert "FailedJobs: jobset failed due to one or more job failures" in head
    # ... and which step and rank failed first, what it said, so the cause is on the one line,
    assert head.endswith(
        '; first failed: node-0 (rank 0): container "node" failed: exit code 1; '
        "its log says: ValueError: lr must be positive"
    )
    # then that rank's last log lines (docs/lifecycle.md: Why a job failed)
    assert lines[at + 1] == "last lines of node-0's log:"
    assert lines[-1] == "  ValueError: lr must be positive"
    _cli(home, "delete", "cli-bad", cwd=tmp_path)


def test_run_follow_shows_the_initializers_lines_then_the_trainers_logs(tmp_path: Path) -> None:
    home = tmp_path / "home"
    init = (
        "import time; time.sleep(0.5); open('/workspace/data.txt', 'w').write('data'); "
        "print('1/1 files, 4 B', flush=True)"
    )
    (tmp_path / "runtime.yaml").write_text(
        yaml.safe_dump(L.runtime("with-init", initializer=init).to_dict())
    )
    job = L.trainjob("inits", "print(open('/workspace/data.txt').read())", runtime="with-init")
    (tmp_path / "job.yaml").write_text(yaml.safe_dump(job.to_dict()))
    run = _cli(home, "run", "-f", "job.yaml", "-f", "runtime.yaml", "--follow", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert run.stdout == "trainjob.trainer.kubeflow.org/inits created\ndata\n"
    # the initializer's own lines on stderr, prefixed with its step, before the trainer's log
    assert "[dataset-initializer] 1/1 files, 4 B" in run.stderr.splitlines(), run.stderr
    progress = [line for line in run.stderr.splitlines() if line.startswith("inits: ")]
    assert all(line.endswith("node-0 Pending") for line in progress), run.stderr
    assert run.stderr.splitlines()[-1].startswith("trainjob.trainer.kubeflow.org/inits Complete")


def test_logs_are_printed_verbatim(tmp_path: Path) -> None:
    # No rich markup, emoji codes or highlighting applied to what the job printed.
    home = tmp_path / "home:thumbs_up:"
    line = "loss :thumbs_up: [bold]0.5[/bold] \x1b[31mred\x1b[0m"
    (tmp_path / "runtime.yaml").write_text(yaml.safe_dump(L.runtime().to_dict()))
    job = L.trainjob("verbatim", f"print({line!r})")
    (tmp_path / "job.yaml").write_text(yaml.safe_dump(job.to_dict()))
    run = _cli(home, "run", "-f", "job.yaml", "-f", "runtime.yaml", "--follow", cwd=tmp_path)
    assert run.stdout == f"trainjob.trainer.kubeflow.org/verbatim created\n{line}\n"
    assert _cli(home, "logs", "verbatim", cwd=tmp_path).stdout == line + "\n"
    described = _cli(home, "describe", "job", "verbatim", cwd=tmp_path).stdout
    assert f"Logs:       {home}/jobs/default/verbatim/logs\n" in described


@pytest.mark.skipif(
    any(importlib.util.find_spec(m) is None for m in ("peft", "pyarrow", "transformers")),
    reason="needs the llm extra",
)
def test_llm_lora_example_fine_tunes_the_demo_model_through_the_torchtune_runtime(
    tmp_path: Path,
) -> None:
    demo = subprocess.run(
        [sys.executable, "-m", "trainjob.trainers.llm.demo", str(tmp_path / "demo")],
        capture_output=True,
        text=True,
        # the build itself is a second; importing torch and transformers cold on a loaded
        # 2-core machine took 110 s: the job's own budget, not a race with the imports
        timeout=600,
    )
    assert demo.returncode == 0, demo.stderr
    data = _example("llm-lora.yaml").to_dict()
    for kind in ("dataset", "model"):  # the example's /tmp/trainjob-llm-demo, here in tmp_path
        uri = data["spec"]["initializer"][kind]["storageUri"]
        assert uri == f"file:///tmp/trainjob-llm-demo/{kind}"
        data["spec"]["initializer"][kind]["storageUri"] = f"file://{tmp_path}/demo/{kind}"
    ex = LocalExecutor(tmp_path / "home")
    tj = parse(data)
    assert isinstance(tj, TrainJob)
    ex.submit(tj, cwd=str(ROOT))
    s = ex.wait("llm-lora", timeout=600)
    lines = list(ex.logs("llm-lora"))
    assert s.phase == "Complete", lines[-20:]
    assert any(line.startswith("Epoch 3/3 step 8/8 loss ") for line in lines)
    assert lines[-1].startswith("saved LoRA adapter (peft) to ")
    # kept after the job (docs/lifecycle.md): $TRAINJOB_HOME/outputs/default/llm-lora/RUN/...
    out = Path(next(o.location for o in ex.outputs("llm-lora") if o.name == "output_dir"))
    assert (out / "adapter_model.safetensors").is_file()


def test_relative_paths_in_a_file_are_relative_to_the_file_from_any_directory(
    tmp_path: Path,
) -> None:
    """``trainjob run -f /path/to/job.yaml`` from elsewhere: the commands run in the file's
    directory (as docker compose resolves a compose file's paths), so ``python scripts/x.py``
    is found; a TrainJob from stdin runs in the working directory."""
    home, project, elsewhere = tmp_path / "home", tmp_path / "project", tmp_path / "elsewhere"
    (project / "scripts").mkdir(parents=True)
    elsewhere.mkdir()
    (project / "scripts" / "hello.py").write_text("import os; print('hello from', os.getcwd())\n")
    (project / "runtime.yaml").write_text(yaml.safe_dump(L.runtime().to_dict()))
    job = L.trainjob("relative", "", nodes=1).to_dict()
    job["spec"]["trainer"]["command"] = ["python", "scripts/hello.py"]
    (project / "job.yaml").write_text(yaml.safe_dump(job))

    run = _cli(
        home,
        "run",
        "-f",
        str(project / "job.yaml"),
        "-f",
        str(project / "runtime.yaml"),
        "--wait",
        cwd=elsewhere,
    )
    assert run.returncode == 0, run.stderr
    assert _cli(home, "logs", "relative", cwd=elsewhere).stdout == f"hello from {project}\n"


@pytest.mark.parametrize("example", ["torch-ddp.yaml", "mpi-hello.yaml"])
def test_the_examples_name_their_scripts_relative_to_themselves(example: str) -> None:
    tj = _example(example)
    assert tj.spec.trainer is not None
    scripts = [a for a in [*(tj.spec.trainer.command or ()), *(tj.spec.trainer.args or ())]]
    scripts = [a for a in scripts if a.endswith(".py")]
    assert scripts and all((ROOT / "examples" / s).is_file() for s in scripts), scripts
