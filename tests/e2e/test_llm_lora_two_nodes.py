"""A 2-node LoRA fine-tune of the demo model on the local backend, watched as a user watches it.

``examples/llm-lora.yaml`` on 2 nodes of 1 process each: torchtune (and upstream's torchtune
runtime, whose validation trainjob keeps for ``tune run`` alone) refuses LoRA on more than one
node, so the TrainJob names the whole ``tune run lora_finetune_distributed ...`` command, which the
runtime passes through as it is; trainjob's LLM trainer runs it over both nodes (torchrun from the
Torch plugin's PET_NNODES=2). While it trains, ``trainjob get jobs -o wide -w`` prints a row each
time the status changes: PROGRESS rises to 100% and LOSS shows the reported loss; afterwards
``describe job`` has the Progress section and the Output line. Ten epochs of the demo's 32 rows
(80 steps of a 25k-parameter model, a few seconds of training idle, more under load: reports are
5 s apart but for the first with a loss and the last, so two at least land while it runs); the
rest of the job is starting Python, torch and transformers.
"""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import pytest
import yaml
from tests.e2e import cli

pytestmark = pytest.mark.e2e
pytest.importorskip("peft")
ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 600.0

COMMAND = [
    "tune",
    "run",
    "lora_finetune_distributed",
    "--config",
    "llama3_2/1B_lora",
    "output_dir=/workspace/output",
    "tokenizer.path=/workspace/model/original/tokenizer.model",
    "checkpointer.checkpoint_dir=/workspace/model",
]


def _job(demo: Path) -> dict[str, object]:
    doc = yaml.safe_load((ROOT / "examples" / "llm-lora.yaml").read_text())
    doc["metadata"]["name"] = "lora2"
    for kind in ("dataset", "model"):
        doc["spec"]["initializer"][kind]["storageUri"] = f"file://{demo}/{kind}"
    trainer = doc["spec"]["trainer"]
    trainer["numNodes"] = 2
    trainer["numProcPerNode"] = 1
    trainer["command"] = COMMAND
    trainer["args"] = [a if not a.startswith("epochs=") else "epochs=10" for a in trainer["args"]]
    trainer["resourcesPerNode"] = {"requests": {"cpu": "1"}}
    return doc  # type: ignore[no-any-return]


def _columns(header: str, line: str) -> dict[str, str]:
    names = header.split()
    values = line.split()
    return dict(zip(names, values, strict=False)) if len(values) == len(names) else {}


def test_two_node_lora_shows_progress_to_100_and_the_loss_then_describe(tmp_path: Path) -> None:
    demo = subprocess.run(
        [sys.executable, "-m", "trainjob.trainers.llm.demo", str(tmp_path / "demo")],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert demo.returncode == 0, demo.stderr
    home = tmp_path / "home"
    job = tmp_path / "lora2.yaml"
    job.write_text(yaml.safe_dump(_job(tmp_path / "demo")))
    ran = cli.trainjob(home, "run", "-f", str(job))
    assert ran.returncode == 0, ran.stdout + ran.stderr

    watch = subprocess.Popen(
        [*cli.CLI, "get", "jobs", "lora2", "-o", "wide", "-w"],
        env=cli.local_env(home),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines: list[str] = []
    done = threading.Event()

    def read() -> None:
        assert watch.stdout is not None
        for line in watch.stdout:
            lines.append(line.rstrip("\n"))
            if " Complete " in line or " Failed " in line:
                done.set()
                return

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        assert done.wait(TIMEOUT), "\n".join(lines[-20:])
    finally:
        watch.terminate()
        watch.wait(10)
    print("\n".join(lines))  # the rows a user saw (pytest -s)
    header = lines[0]
    assert header.split()[:2] == ["NAME", "STATUS"] and "LOSS" in header, header
    rows = [_columns(header, ln) for ln in lines[1:]]
    rows = [r for r in rows if r]
    assert rows[-1]["STATUS"] == "Complete", "\n".join(lines)
    progress = [int(r["PROGRESS"].rstrip("%")) for r in rows if r["PROGRESS"] != "<none>"]
    assert progress == sorted(progress), f"PROGRESS only rises: {progress}"
    assert progress[-1] == 100, lines
    running = [r for r in rows if r["STATUS"] == "Running" and r["PROGRESS"] != "<none>"]
    assert any(0 < int(r["PROGRESS"].rstrip("%")) < 100 for r in running), (
        f"a row while it ran, part way: {lines}"
    )

    # The ground truth: every report the run made, as the store keeps them. The trainer's
    # reports are throttled to one per 5 s, but its first report with a loss (step 1) and its
    # last (100 %, the final loss) are always sent (trainers/reporting.py): two with a loss at
    # least, however fast the machine, and the loss fell between them.
    from trainjob.local import LocalExecutor

    history = [m for m in LocalExecutor(home).metric_history("lora2") if m.loss is not None]
    print(
        [(m.time, m.progress_percentage, m.metrics.get("current_step"), m.loss) for m in history]
    )  # pytest -s
    assert len(history) >= 2, f"the first and the last report with a loss: {history}"
    assert history[0].metrics.get("current_step") == "1", history[0]
    final = history[-1]
    assert final.progress_percentage == 100 and final.estimated_remaining_seconds == 0, final
    assert float(history[-1].metrics["loss"]) < float(history[0].metrics["loss"]), history

    # What the watch showed: it polls (every 0.5 s), so it may miss a report that another
    # replaced before its next poll (two in the same second, near the end, under load); each
    # row with a loss is one of the reports, in their order, and the last is the final one (the
    # Complete row shows it). The first report with a loss stays the latest until the next one,
    # 5 s later by the throttle or the run's end, 79 steps later: the watch shows it or (had it
    # missed that one) a later report from while the run went on. The loss the watch showed falls
    # from its first row with a loss to its last.
    shown = [r for r in rows if r["LOSS"] != "<none>"]
    reported = [f"{float(m.metrics['loss']):.4g}" for m in history]
    at = 0
    for r in shown:
        assert r["LOSS"] in reported[at:], f"a row's LOSS is a report's, in order: {r} {reported}"
        at = reported.index(r["LOSS"], at)
    assert shown[-1]["LOSS"] == reported[-1] and shown[-1]["STATUS"] == "Complete", shown
    assert shown[-1]["PROGRESS"] == "100%", shown
    assert float(shown[0]["LOSS"]) > float(shown[-1]["LOSS"]), f"the loss falls: {lines}"

    logs = cli.trainjob(home, "logs", "lora2")
    assert "2 process(es)" in logs.stdout or "world size 2" in logs.stdout, logs.stdout[-3000:]
    described = cli.trainjob(home, "describe", "job", "lora2")
    text = described.stdout
    assert described.returncode == 0, described.stderr
    assert "Progress (100%, reported " in text, text
    assert "loss" in text, text
    outputs = [ln for ln in text.splitlines() if ln.startswith("Output:")]
    assert outputs, text
    where = Path(outputs[0].split()[1])
    assert (where / "adapter_model.safetensors").is_file(), outputs
