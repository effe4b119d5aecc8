"""What a run leaves in ``output_dir``: a loadable model or a peft adapter.

After each epoch but the last, ``output_dir/epoch_N/`` (N from 0, as torchtune names them) gets
that epoch's; the finished run's goes in ``output_dir`` itself.

Full fine-tuning saves the whole model with ``save_pretrained`` (config.json + safetensors) and
the tokenizer, so ``AutoModelForCausalLM.from_pretrained(output_dir)`` loads it; LoRA and DoRA
save the peft adapter (adapter_config.json + adapter_model.safetensors) and the tokenizer, so
``PeftModel.from_pretrained(base, output_dir)`` loads it. Only rank 0 calls :func:`save`
(from :mod:`.train`).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from trainjob.trainers.llm.errors import TrainerError
from trainjob.trainers.llm.recipes import Method


def check_output_dir(output_dir: str) -> Path:
    """Create ``output_dir`` if needed and make sure it is a writable directory, before training,
    so a bad ``output_dir`` fails in a second rather than after the whole run."""
    out = Path(output_dir)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise TrainerError(
            f"output_dir={output_dir} cannot be created ({exc.strerror or exc}); "
            "point output_dir at a writable directory"
        ) from None
    if not os.access(out, os.W_OK | os.X_OK):
        raise TrainerError(
            f"output_dir={output_dir} is not writable; point output_dir at a writable directory"
        )
    return out


def save(model: Any, tokenizer: Any, method: Method, output_dir: str) -> list[str]:
    """Write the trained weights and the tokenizer; returns the file names written."""
    out = check_output_dir(output_dir)
    try:
        model.save_pretrained(str(out))
        tokenizer.save_pretrained(str(out))
    except OSError as exc:
        raise TrainerError(
            f"cannot save to output_dir={output_dir}: {exc.strerror or exc}"
            f"{': ' + str(exc.filename) if exc.filename else ''}; free space or fix its permissions"
        ) from None
    return sorted(p.name for p in out.iterdir() if p.is_file())


def describe(method: Method) -> str:
    """What :func:`save` writes for this method, for the log."""
    return "full model (safetensors)" if method is Method.FULL else "LoRA adapter (peft)"
