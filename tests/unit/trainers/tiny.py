"""The tiny checkpoint and dataset of the trainer's tests (:mod:`trainjob.trainers.llm.demo`),
and the SFTConfig their in-process trainers are built with."""

from pathlib import Path
from typing import Any

from trainjob.trainers.llm.demo import (
    TEMPLATE_TEXT,
    WORDS,
    checkpoint,
    dataset,
    parquet,
    rows,
    tokenizer,
)

__all__ = [
    "TEMPLATE_TEXT",
    "WORDS",
    "checkpoint",
    "dataset",
    "parquet",
    "rows",
    "sft_args",
    "tokenizer",
]


def sft_args(output_dir: Path, **overrides: Any) -> Any:
    """TRL's SFTConfig for a trainer built in a test: CPU, fp32, batch 2, no checkpointing, no
    reports or progress bars; ``overrides`` on top."""
    from trl import SFTConfig  # type: ignore[attr-defined]

    return SFTConfig(
        **{
            "output_dir": str(output_dir),
            "use_cpu": True,
            "bf16": False,
            "report_to": "none",
            "per_device_train_batch_size": 2,
            "activation_checkpointing": False,
            "disable_tqdm": True,
            **overrides,
        }
    )
