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


# ---- resumable checkpoints (transformers' checkpoint-N folders, marked complete by trainjob)

CHECKPOINTS = "checkpoints"
"""Folder of ``output_dir`` holding the resumable checkpoints (``checkpoint-<step>/``)."""
COMPLETE = "trainjob-complete.json"
"""Written last, atomically, once every rank has written its part: only a checkpoint that has
it is resumed from, so one cut short by a crash or a kill is never picked."""


def checkpoints_dir(output_dir: str) -> str:
    """Where the resumable checkpoints of a run in ``output_dir`` go."""
    return os.path.join(output_dir, CHECKPOINTS)


def mark_complete(checkpoints: str, step: int) -> str:
    """Mark ``checkpoint-<step>`` under ``checkpoints`` complete (write to a temp name, fsync,
    rename); returns its path."""
    import json

    where = os.path.join(checkpoints, f"checkpoint-{step}")
    tmp = os.path.join(where, f".{COMPLETE}.tmp")
    with open(tmp, "w") as f:
        json.dump({"step": step}, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, os.path.join(where, COMPLETE))
    return where


def newest_complete(output_dir: str) -> tuple[str | None, list[str]]:
    """The newest complete checkpoint of a run in ``output_dir`` (None if none), and the
    incomplete ones newer than it (cut short: to be removed before training goes on)."""
    return newest_complete_in(checkpoints_dir(output_dir))


def newest_complete_in(checkpoints: str) -> tuple[str | None, list[str]]:
    """:func:`newest_complete` for the ``checkpoint-<step>`` folders directly in ``checkpoints``
    (where TRL's ``output_dir`` keeps them)."""
    import re

    root = Path(checkpoints)
    if not root.is_dir():
        return None, []
    found = []
    for path in root.iterdir():
        m = re.fullmatch(r"checkpoint-(\d+)", path.name)
        if m and path.is_dir():
            found.append((int(m.group(1)), path))
    incomplete: list[str] = []
    for _step, path in sorted(found, reverse=True):
        if (path / COMPLETE).is_file():
            return str(path), incomplete
        incomplete.append(str(path))
    return None, incomplete


def save_merged(model: Any, tokenizer: Any, output_dir: str) -> str:
    """LoRA/DoRA: the base model with the adapter merged in, as a plain transformers model in
    ``output_dir/merged`` (torchtune saves merged weights beside the adapter too)."""
    import copy

    import torch

    where = os.path.join(output_dir, MERGED)
    work = copy.deepcopy(model)
    base = work.get_base_model()
    head = getattr(base.get_output_embeddings(), "base_layer", None)
    embed = base.get_input_embeddings()
    if head is not None and head.weight.data_ptr() == embed.weight.data_ptr():
        # LoRA on a tied lm_head: merging into the shared matrix would change the input
        # embeddings too; the merged model gets its own output matrix instead
        head.weight = torch.nn.Parameter(embed.weight.detach().clone())
        base.config.tie_word_embeddings = False
        text = getattr(base.config, "get_text_config", None)
        if text is not None:
            text().tie_word_embeddings = False
    merged = work.merge_and_unload()
    save(merged, tokenizer, Method.FULL, where)
    return where


MERGED = "merged"
"""Folder of ``output_dir`` with the merged model of a LoRA run."""
