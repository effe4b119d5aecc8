"""A 2-node LoRA fine-tune of the demo model on the local backend, watched as a user watches it.

``examples/llm-lora.yaml`` on 2 nodes of 1 process each: torchtune (and upstream's torchtune
runtime, whose validation trainjob keeps for ``tune run`` alone) refuses LoRA on more than one
node, so the TrainJob names the whole ``tune run lora_finetune_distributed ...`` command, which the
runtime passes through as it is; trainjob's LLM trainer runs it over both nodes (torchrun from the
Torch plugin's PET_NNODES=2). While it trains, ``trainjob get jobs -o wide -w`` prints a row each
time the status changes: PROGRESS rises to 100% and LOSS shows the reported loss; afterwards
``describe job`` has the Progress section and the Output line. Ten epochs of the demo's 32 rows
(80 steps of a 25k-parameter model, ~15 s of training: reports are 5 s apart, so a few land
while it runs); the rest of the job is starting Python, torch and transformers.
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
    assert running, f"a row with progress while it ran: {lines}"
    losses = [float(r["LOSS"]) for r in rows if r["LOSS"] != "<none>"]
    assert losses and all(x > 0 for x in losses), lines
    # the trainer's reports are throttled: a fast machine's 80 steps may make one report with a
    # loss, so a falling loss is not asserted here; what the watch shows is the last report
    from trainjob.local import LocalExecutor

    history = [
        float(m.metrics["loss"])
        for m in LocalExecutor(home).metric_history("lora2")
        if "loss" in m.metrics
    ]
    assert history, "the run reported its loss"
    assert losses[-1] == pytest.approx(history[-1], abs=1e-3), (losses, history)

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
