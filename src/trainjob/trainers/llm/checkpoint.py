"""What a finished run leaves in ``output_dir``: a loadable model or a peft adapter.

Full fine-tuning saves the whole model with ``save_pretrained`` (config.json + safetensors) and
the tokenizer, so ``AutoModelForCausalLM.from_pretrained(output_dir)`` loads it; LoRA and DoRA
save the peft adapter (adapter_config.json + adapter_model.safetensors) and the tokenizer, so
``PeftModel.from_pretrained(base, output_dir)`` loads it. Only rank 0 calls :func:`save`
(from :mod:`.train`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from trainjob.trainers.llm.recipes import Method


def save(model: Any, tokenizer: Any, method: Method, output_dir: str) -> list[str]:
    """Write the trained weights and the tokenizer; returns the file names written."""
    out = Path(output_dir)
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(out))
    tokenizer.save_pretrained(str(out))
    return sorted(p.name for p in out.iterdir() if p.is_file())


def describe(method: Method) -> str:
    """What :func:`save` writes for this method, for the log."""
    return "full model (safetensors)" if method is Method.FULL else "LoRA adapter (peft)"
