"""The dataset of a ``trl`` run: ``--dataset_name`` as a local folder, a local file, or a Hub name.

TRL's scripts call ``datasets.load_dataset(dataset_name, name=dataset_config)``; that reads a
local folder (what the dataset initializer writes: json/jsonl/csv/parquet files, split by file
name) or a Hub dataset. Here a single file works too (``load_dataset(<format>, data_files=...)``),
and what cannot be read is one line naming the flag. So are rows TRL's trainer could not use (its
own error is a traceback from deep in ``datasets.map``, e.g. ``KeyError: 'text'``). Called by
:mod:`.launch` (to check before starting processes) and :mod:`.train`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from trainjob.trainers.llm.errors import TrainerError

FORMATS = {".json": "json", ".jsonl": "json", ".csv": "csv", ".parquet": "parquet"}


NEEDS = {
    "sft": 'a "text" column (or the one --dataset_text_field names), "messages" (conversations), '
    '"conversations" (ShareGPT from/value turns), "prompt" and "completion", or "input_ids" '
    "(already tokenized)",
    "dpo": '"chosen" and "rejected" columns (and "prompt", unless the prompt is in both)',
    "grpo": 'a "prompt" column',
}
"""What each method's trainer reads from a row, as the error says it."""


def usable(method: str, columns: set[str], text_field: str) -> bool:
    """Whether TRL's trainer for ``method`` can use rows with ``columns`` (its own rules:
    ``SFTTrainer._prepare_dataset``, DPO's preference and GRPO's prompt-only formats)."""
    if method == "sft":
        forms = ({"input_ids"}, {"messages"}, {"conversations"}, {text_field})
        return any(f <= columns for f in forms) or {"prompt", "completion"} <= columns
    if method == "dpo":
        return {"chosen", "rejected"} <= columns
    return "prompt" in columns


def check_columns(method: str, script: Any, training: Any, rows: Any) -> None:
    """A :class:`TrainerError` naming the columns found and those ``method`` needs, when TRL
    could not train on ``rows`` (a split); nothing when ``--dataset_kwargs`` skips TRL's
    preparation (the rows are then the user's business)."""
    kwargs = getattr(training, "dataset_kwargs", None) or {}
    if kwargs.get("skip_prepare_dataset"):
        return
    columns = set(getattr(rows, "column_names", None) or [])
    text_field = str(getattr(training, "dataset_text_field", "text") or "text")
    if usable(method, columns, text_field):
        return
    found = ", ".join(sorted(columns)) or "none"
    hint = ""
    if {"instruction", "output"} <= columns:
        hint = (
            "; instruction/input/output rows (Alpaca) are `tune run`'s instruct format, or map "
            'them to "prompt" and "completion"'
        )
    raise TrainerError(
        f"--dataset_name={script.dataset_name}: split {script.dataset_train_split!r} has the "
        f"columns {found}; trl {method} needs {NEEDS[method]}{hint}"
    )


def load(script: Any) -> Any:
    """The DatasetDict ``script`` (TRL's ScriptArguments) names, with its train split checked."""
    import datasets  # type: ignore[import-untyped]

    datasets.disable_progress_bars()
    name = str(script.dataset_name)
    path = Path(name)
    try:
        if path.is_file():
            kind = FORMATS.get(path.suffix)
            if kind is None:
                raise TrainerError(
                    f"--dataset_name={name}: cannot tell the format of {path.name}; use a "
                    f"{', '.join(FORMATS)} file or a folder of them"
                )
            loaded = datasets.load_dataset(kind, data_files=str(path))
        else:
            loaded = datasets.load_dataset(name, name=script.dataset_config)
    except TrainerError:
        raise
    except Exception as exc:  # datasets raises many kinds; the first line says which
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        where = "" if path.exists() else " (not a local file or folder, and the Hub said no)"
        raise TrainerError(f"cannot load --dataset_name={name}{where}: {first}") from None
    split = script.dataset_train_split
    if split not in loaded:
        raise TrainerError(
            f"--dataset_name={name} has no split {split!r} (splits: {', '.join(loaded)}); "
            "set --dataset_train_split"
        )
    return loaded
