"""The tiny checkpoint and dataset of the trainer's tests: :mod:`trainjob.trainers.llm.demo`."""

from trainjob.trainers.llm.demo import (
    TEMPLATE_TEXT,
    WORDS,
    checkpoint,
    dataset,
    parquet,
    rows,
    tokenizer,
)

__all__ = ["TEMPLATE_TEXT", "WORDS", "checkpoint", "dataset", "parquet", "rows", "tokenizer"]
