"""``trainjob.trainers.llm.load.load_adapter``: peft's two calls, the adapter on its base, in a
fresh interpreter (as a user's script imports peft the first time) printing nothing on stderr,
and transformers' progress-bar setting left as the caller had it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.unit.trainers.tiny import checkpoint

pytest.importorskip("peft")


def test_the_adapter_loads_on_its_base_quietly(tmp_path: Path) -> None:
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    base = checkpoint(tmp_path / "model")
    model = get_peft_model(
        AutoModelForCausalLM.from_pretrained(str(base)),
        LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"]),
    )
    model.save_pretrained(str(tmp_path / "adapter"))
    script = (
        "from transformers.utils import logging\n"
        "from trainjob.trainers.llm.load import load_adapter\n"
        f"m = load_adapter({str(base)!r}, {str(tmp_path / 'adapter')!r})\n"
        "print(type(m).__name__, m.peft_config['default'].r, logging.is_progress_bar_enabled())\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300, check=False
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["PeftModel", "4", "True"]
    assert out.stderr == ""
