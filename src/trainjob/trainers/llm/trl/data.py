"""The dataset of a ``trl`` run: ``--dataset_name`` as a local folder, a local file, or a Hub name.

TRL's scripts call ``datasets.load_dataset(dataset_name, name=dataset_config)``; that reads a
local folder (what the dataset initializer writes: json/jsonl/csv/parquet files, split by file
name) or a Hub dataset. Here a single file works too (``load_dataset(<format>, data_files=...)``),
and what cannot be read is one line naming the flag. Called by :mod:`.launch` (to check before
starting processes) and :mod:`.train`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from trainjob.trainers.llm.errors import TrainerError

FORMATS = {".json": "json", ".jsonl": "json", ".csv": "csv", ".parquet": "parquet"}


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
