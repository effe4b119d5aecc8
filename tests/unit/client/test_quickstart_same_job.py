"""docs/llm-quickstart.md's Python (2a) and ``examples/llm-lora.yaml`` (2b) are the same job: the
SDK call of the page's block, built as ``client.train`` builds it, has the YAML's runtime,
initializer URIs, command, arguments (in the same order) and CPU request. Before, 2a trained one
optimizer step (batch 2 x the recipe's 8 accumulation over 32 rows) and 2b 24.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

import trainjob
from trainjob.client import builder

REPO = Path(__file__).resolve().parents[3]


def quickstart_train_call() -> dict[str, Any]:
    """The keyword arguments of the page's ``client.train(...)``, evaluated with trainjob's
    names (what the block imports)."""
    page = (REPO / "docs" / "llm-quickstart.md").read_text()
    block = re.search(r"## 2a\..*?^```python\n(.*?)^```", page, re.M | re.S)
    assert block, "docs/llm-quickstart.md has no python block under 2a"
    call = next(
        n
        for n in ast.walk(ast.parse(block.group(1)))
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "train"
    )
    names = {k: getattr(trainjob, k) for k in trainjob.__all__}
    return {
        k.arg: eval(compile(ast.Expression(k.value), "quickstart", "eval"), names)
        for k in call.keywords
        if k.arg
    }


def test_the_quickstart_s_python_and_yaml_are_the_same_job(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TRAINJOB_HOME", str(tmp_path))
    kw = quickstart_train_call()
    runtime = trainjob.TrainerClient().get_runtime(kw.pop("runtime"))
    sdk = builder.build(runtime, kw["initializer"], kw["trainer"])["spec"]
    want = yaml.safe_load((REPO / "examples" / "llm-lora.yaml").read_text())["spec"]
    assert sdk["runtimeRef"] == want["runtimeRef"]
    for step in ("dataset", "model"):
        assert sdk["initializer"][step]["storageUri"] == want["initializer"][step]["storageUri"]
    assert sdk["trainer"]["command"] == want["trainer"]["command"]
    assert sdk["trainer"]["args"] == want["trainer"]["args"]
    cpu = str(sdk["trainer"]["resourcesPerNode"]["requests"]["cpu"])
    assert cpu == want["trainer"]["resourcesPerNode"]["requests"]["cpu"]


def test_fine_tuning_s_yaml_is_the_example_file() -> None:
    page = (REPO / "docs" / "fine-tuning.md").read_text()
    block = re.search(r"^## Run one\n.*?^```yaml\n(.*?)^```", page, re.M | re.S)
    assert block
    example = yaml.safe_load((REPO / "examples" / "llm-lora.yaml").read_text())
    assert yaml.safe_load(block.group(1)) == example
