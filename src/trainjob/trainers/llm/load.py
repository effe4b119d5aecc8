"""Load what a LoRA fine-tune wrote, to use it: the base model with the adapter on it.

:func:`load_adapter` is ``PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(base),
adapter)``, the two calls peft's docs show, without the lines they print on the user's stderr
that say nothing about the user's model (what a quickstart's first run should show is the run):
bitsandbytes' import-time notice that it could not fetch a faster CPU kernel (peft imports
bitsandbytes whenever it is installed; :func:`trainjob.trainers.llm.model.quiet_bitsandbytes`),
transformers' weight-loading progress bar, and the ``FutureWarning`` peft's question to
transformers raises (``is_gradient_checkpointing``). Each is turned off for the call only; the
caller's settings are as they were after it. Errors and other warnings still show.
"""

from __future__ import annotations

import logging
import warnings
from pathlib import Path
from typing import Any


def load_adapter(base: str | Path, adapter: str | Path, **kwargs: Any) -> Any:
    """The model in ``base`` (a Hugging Face checkpoint directory or Hub id) with the LoRA adapter
    in ``adapter`` (the run's ``output_dir``) applied: a ``peft.PeftModel``. ``kwargs`` go to
    ``AutoModelForCausalLM.from_pretrained`` (``dtype=``, ``device_map=``)."""
    bnb = logging.getLogger("bitsandbytes")
    level = bnb.level
    bnb.setLevel(logging.ERROR)  # its import-time notice (see the module docstring)
    try:
        from peft import PeftModel
        from transformers import AutoModelForCausalLM
        from transformers.utils import logging as hf_logging
    finally:
        bnb.setLevel(level)
    bar = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings(
                "ignore", message=".*is_gradient_checkpointing.*", category=FutureWarning
            )
            model = AutoModelForCausalLM.from_pretrained(str(base), **kwargs)
            return PeftModel.from_pretrained(model, str(adapter))
    finally:
        if bar:
            hf_logging.enable_progress_bar()  # type: ignore[no-untyped-call]
