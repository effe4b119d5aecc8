"""The instruct dataset: read local files, pick the split, build prompts, tokenize, mask, collate.

Like torchtune's ``instruct_dataset``: each row has an ``input`` (optionally an Alpaca-style
``instruction``) and an ``output``, renamed by ``dataset.column_map`` (``{canonical: column}``).
The prompt is the tokenizer's chat template when it has one (system, user, then the assistant's
answer), else a plain ``### Instruction/### Input/### Response`` template; labels are -100 over
the prompt unless ``dataset.train_on_input``. Files are read with the standard library (json,
jsonl, csv) or pyarrow (parquet). Called by :mod:`.train` (and :mod:`.launch` to check the data
is there before starting processes).
"""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from trainjob.trainers.llm.config import DatasetConfig
from trainjob.trainers.llm.errors import TrainerError
from trainjob.trainers.llm.overrides import SOURCES

IGNORE_INDEX = -100
"""Label value the loss skips (prompt tokens, padding)."""

Row = dict[str, Any]

EXTENSIONS = {".json": "json", ".jsonl": "jsonl", ".csv": "csv", ".parquet": "parquet"}


class TextTokenizer(Protocol):
    """The part of a Hugging Face tokenizer this module uses."""

    eos_token_id: int | None
    chat_template: str | None

    def encode(self, text: str, add_special_tokens: bool = ...) -> list[int]: ...

    def apply_chat_template(self, conversation: Any, **kwargs: Any) -> Any: ...


@dataclass(frozen=True)
class Example:
    """One tokenized row: the ids and the labels (-100 where the loss does not look)."""

    input_ids: list[int]
    labels: list[int]


# ---- files


def resolve_files(ds: DatasetConfig) -> tuple[list[Path], str]:
    """The files to read and their format, from ``data_files``/``data_dir`` and ``source``."""
    if ds.data_files:
        files = [Path(f) for f in ds.data_files]
        missing = [f for f in files if not f.is_file()]
        if missing:
            raise TrainerError(
                f"dataset.data_files: {missing[0]} does not exist; point it at a json, jsonl, "
                "csv or parquet file"
            )
    else:
        assert ds.data_dir is not None
        root = Path(ds.data_dir)
        if not root.is_dir():
            raise TrainerError(
                f"dataset.data_dir={root} is not a directory; point it at the dataset's files "
                "(the dataset initializer writes them under /workspace/dataset)"
            )
        wanted = {ext for ext, src in EXTENSIONS.items() if ds.source in (None, src)}
        if ds.source == "json":
            wanted.add(".jsonl")
        files = sorted(p for p in root.rglob("*") if p.is_file() and p.suffix in wanted)
        split_name = _split_base(ds.split)
        named = [p for p in files if split_name in p.name]
        if files and not named and split_name != "train":
            # As Hugging Face datasets does: files named for no split are the train split.
            raise TrainerError(
                f'dataset.split={ds.split}: no file under dataset.data_dir={root} has "{split_name}" '
                "in its name (the files there form the train split); use dataset.split=train or "
                "name the files for the split"
            )
        files = named or files
        if not files:
            raise TrainerError(
                f"empty dataset: dataset.data_dir={root} has no {ds.source or 'json/jsonl/csv/parquet'} "
                "files; put the data there or set dataset.source to its format"
            )
    source = ds.source or _source_of(files)
    return files, source


def _source_of(files: Sequence[Path]) -> str:
    kinds = {EXTENSIONS.get(p.suffix) for p in files}
    if len(kinds) != 1 or None in kinds:
        raise TrainerError(
            f"cannot tell the dataset format of {', '.join(p.name for p in files[:3])}; "
            f"set dataset.source to one of {', '.join(SOURCES)}"
        )
    kind = kinds.pop()
    assert kind is not None
    return kind


def read_rows(files: Sequence[Path], source: str) -> list[Row]:
    """All rows of the files, in order."""
    rows: list[Row] = []
    for path in files:
        try:
            read = _read(path, source)
        except (ValueError, OSError, UnicodeDecodeError, TypeError) as exc:
            raise TrainerError(
                f"dataset file {path} is not valid {source} ({exc}); fix it or set dataset.source"
            ) from None
        for number, row in enumerate(read, 1):
            if not isinstance(row, dict):
                raise TrainerError(
                    f"dataset file {path}: row {number} is {type(row).__name__} {str(row)[:40]!r}, "
                    'not an object of columns; write each row as {"input": ..., "output": ...}'
                )
        rows.extend(read)
    return rows


def _read(path: Path, source: str) -> list[Any]:
    if source == "parquet":
        import pyarrow.parquet as pq

        return list(pq.read_table(path).to_pylist())
    text = path.read_text(encoding="utf-8")
    if source == "csv":
        return list(csv.DictReader(text.splitlines()))
    stripped = text.lstrip()
    if stripped.startswith("["):
        data = json.loads(text)
        return list(data)
    if stripped.startswith("{") and source == "json" and path.suffix == ".json":
        try:
            data = json.loads(text)
        except json.JSONDecodeError:
            data = None
        if isinstance(data, dict):
            # {"data": [...]} or {"train": [...]}: a single list-valued field.
            lists = [v for v in data.values() if isinstance(v, list)]
            if len(lists) == 1:
                return list(lists[0])
            return [data]
    return [json.loads(line) for line in text.splitlines() if line.strip()]


_SLICE = re.compile(r"^(?P<name>[\w.-]+)(\[(?P<start>-?\d+%?)?:(?P<stop>-?\d+%?)?\])?$")


def _split_base(split: str) -> str:
    match = _SLICE.match(split.strip())
    return match.group("name") if match else split


def select_split(rows: list[Row], split: str) -> list[Row]:
    """``train`` (all rows) or a slice like ``train[:90%]``, ``train[10:]`` as in ``datasets``."""
    match = _SLICE.match(split.strip())
    if not match:
        raise TrainerError(
            f'dataset.split="{split}" is not a split name or slice (e.g. train, train[:90%])'
        )

    def bound(text: str | None) -> int | None:
        if text is None:
            return None
        if text.endswith("%"):
            return round(len(rows) * int(text[:-1]) / 100)
        return int(text)

    return rows[bound(match.group("start")) : bound(match.group("stop"))]


def load_rows(ds: DatasetConfig) -> list[Row]:
    """Resolve, read and split the dataset; :class:`TrainerError` if nothing is left."""
    files, source = resolve_files(ds)
    rows = select_split(read_rows(files, source), ds.split)
    if not rows:
        where = ds.data_dir or ", ".join(ds.data_files)
        raise TrainerError(
            f"empty dataset: {where} has no rows in split {ds.split}; add rows or change dataset.split"
        )
    return rows


# ---- prompts and tokens


def _column(row: Row, ds: DatasetConfig, name: str, required: bool) -> str:
    column = ds.column_map.get(name, name)
    if column not in row:
        if not required and name not in ds.column_map:
            return ""
        raise TrainerError(
            f'dataset has no column "{column}" (columns: {", ".join(map(str, row))}); '
            f"map it with dataset.column_map={{'{name}': '<column>'}}"
        )
    value = row[column]
    return "" if value is None else str(value)


def prompt_and_response(
    row: Row, ds: DatasetConfig, chat: bool
) -> tuple[str | list[dict[str, str]], str]:
    """The prompt (text, or chat messages when ``chat``) and the response of one row."""
    instruction = _column(row, ds, "instruction", required=False)
    user_input = _column(row, ds, "input", required=not instruction)
    response = _column(row, ds, "output", required=True)
    if chat:
        messages: list[dict[str, str]] = []
        if ds.new_system_prompt:
            messages.append({"role": "system", "content": ds.new_system_prompt})
        content = "\n\n".join(part for part in (instruction, user_input) if part)
        messages.append({"role": "user", "content": content})
        return messages, response
    parts = [ds.new_system_prompt] if ds.new_system_prompt else []
    if instruction:
        parts.append(f"### Instruction:\n{instruction}")
    if user_input:
        parts.append(f"### Input:\n{user_input}")
    parts.append("### Response:\n")
    return "\n\n".join(parts), response


ROLES = {
    "system": "system",
    "user": "user",
    "assistant": "assistant",
    "human": "user",
    "gpt": "assistant",
}
"""Message roles, openai's and sharegpt's names, to the chat template's."""


def conversation(row: Row, ds: DatasetConfig) -> list[dict[str, str]]:
    """A chat_dataset row's messages as ``{role, content}`` (``new_system_prompt`` first)."""
    column = ds.conversation_column
    if column not in row:
        raise TrainerError(
            f'dataset has no column "{column}" (columns: {", ".join(map(str, row))}); '
            "set dataset.conversation_column=<column of the conversations>"
        )
    raw = row[column]
    if not isinstance(raw, list) or not raw:
        raise TrainerError(
            f'dataset column "{column}" must hold a list of messages, got {str(raw)[:60]!r}'
        )
    role_key, text_key = (
        ("from", "value") if ds.conversation_style == "sharegpt" else ("role", "content")
    )
    messages: list[dict[str, str]] = []
    for message in raw:
        if not isinstance(message, dict) or role_key not in message or text_key not in message:
            raise TrainerError(
                f"dataset.conversation_style={ds.conversation_style}: each message must have "
                f'"{role_key}" and "{text_key}", got {str(message)[:60]!r}'
            )
        role = ROLES.get(str(message[role_key]))
        if role is None:
            raise TrainerError(
                f'unknown message role "{message[role_key]}"; known: {", ".join(ROLES)}'
            )
        messages.append({"role": role, "content": str(message[text_key] or "")})
    if ds.new_system_prompt:
        messages = [m for m in messages if m["role"] != "system"]
        messages.insert(0, {"role": "system", "content": ds.new_system_prompt})
    if not any(m["role"] == "assistant" for m in messages):
        raise TrainerError("a conversation has no assistant message to learn from")
    return messages


def check_row(row: Row, ds: DatasetConfig) -> None:
    """Raise :class:`TrainerError` if a row lacks what ``ds`` reads from it."""
    if ds.chat:
        conversation(row, ds)
    else:
        prompt_and_response(row, ds, chat=False)


def tokenize_conversation(
    messages: list[dict[str, str]],
    ds: DatasetConfig,
    tokenizer: TextTokenizer,
    max_seq_len: int | None,
) -> Example | None:
    """A conversation's ids and labels: each message tokenized on its own, as torchtune does,
    the assistant's replies learned and the rest masked unless ``train_on_input``.

    With a chat template, each message's text is what rendering the conversation up to it adds
    (the assistant's turn header goes with the prompt); without one, ``### Role:`` blocks.
    """
    eos = tokenizer.eos_token_id
    if eos is None:
        raise TrainerError(
            "the tokenizer has no eos token; set eos_token in the model's tokenizer_config.json"
        )
    template = bool(getattr(tokenizer, "chat_template", None))
    ids: list[int] = []
    labels: list[int] = []

    def add(text: str, learn: bool, special: bool = False) -> None:
        piece = tokenizer.encode(text, add_special_tokens=special) if text else []
        ids.extend(piece)
        labels.extend(piece if learn or ds.train_on_input else [IGNORE_INDEX] * len(piece))

    if template:
        done = ""
        for i, message in enumerate(messages):
            if message["role"] == "assistant":
                head = (
                    str(
                        tokenizer.apply_chat_template(
                            messages[:i], tokenize=False, add_generation_prompt=True
                        )
                    )
                    if i
                    else ""
                )
                if not head.startswith(done):
                    raise TrainerError(
                        "the tokenizer's chat template does not render a conversation prefix by prefix"
                    )
                add(head[len(done) :], learn=False)
                done = head
            text = str(tokenizer.apply_chat_template(messages[: i + 1], tokenize=False))
            if not text.startswith(done):
                raise TrainerError(
                    "the tokenizer's chat template does not render a conversation prefix by "
                    "prefix; use a template without lookahead"
                )
            add(text[len(done) :], learn=message["role"] == "assistant")
            done = text
    else:
        for i, message in enumerate(messages):
            add(f"### {message['role'].title()}:\n", learn=False, special=i == 0)
            learn = message["role"] == "assistant"
            add(message["content"], learn=learn)
            if learn:
                ids.append(eos)
                labels.append(eos)
            add("\n\n", learn=False)
    if max_seq_len is not None:
        ids, labels = ids[:max_seq_len], labels[:max_seq_len]
    if all(label == IGNORE_INDEX for label in labels):
        return None
    return Example(ids, labels)


def tokenize_row(
    row: Row, ds: DatasetConfig, tokenizer: TextTokenizer, max_seq_len: int | None
) -> Example | None:
    """One row's ids and labels (prompt masked unless train_on_input); None if nothing to learn."""
    if ds.chat:
        return tokenize_conversation(conversation(row, ds), ds, tokenizer, max_seq_len)
    chat = bool(getattr(tokenizer, "chat_template", None))
    prompt, response = prompt_and_response(row, ds, chat)
    if isinstance(prompt, list):
        text = tokenizer.apply_chat_template(prompt, tokenize=False, add_generation_prompt=True)
        prompt_ids = tokenizer.encode(str(text), add_special_tokens=False)
    else:
        prompt_ids = tokenizer.encode(prompt, add_special_tokens=True)
    eos = tokenizer.eos_token_id
    if eos is None:
        raise TrainerError(
            "the tokenizer has no eos token; set eos_token in the model's tokenizer_config.json"
        )
    response_ids = [*tokenizer.encode(response, add_special_tokens=False), eos]
    ids = [*prompt_ids, *response_ids]
    labels = ids.copy() if ds.train_on_input else [IGNORE_INDEX] * len(prompt_ids) + response_ids
    if max_seq_len is not None:
        ids, labels = ids[:max_seq_len], labels[:max_seq_len]
    if all(label == IGNORE_INDEX for label in labels):
        return None
    return Example(ids, labels)


def tokenize_rows(
    rows: Sequence[Row], ds: DatasetConfig, tokenizer: TextTokenizer, max_seq_len: int | None
) -> tuple[list[Example], int]:
    """Every row tokenized; also how many were dropped (truncated down to the prompt only)."""
    examples: list[Example] = []
    dropped = 0
    for row in rows:
        example = tokenize_row(row, ds, tokenizer, max_seq_len)
        if example is None:
            dropped += 1
        else:
            examples.append(example)
    if not examples:
        raise TrainerError(
            "empty dataset: no row has a response left to train on; raise tokenizer.max_seq_len"
        )
    return examples, dropped


def to_dataset(examples: Sequence[Example]) -> Any:
    """The tokenized examples as a ``datasets.Dataset`` (``input_ids``, ``labels``) for TRL."""
    from datasets import Dataset  # type: ignore[import-untyped]

    return Dataset.from_dict(
        {"input_ids": [e.input_ids for e in examples], "labels": [e.labels for e in examples]}
    )


def collate(batch: Sequence[Example], pad_id: int) -> dict[str, Any]:
    """Right-pad a batch: ``input_ids``, ``labels`` (-100 on padding) and ``attention_mask``."""
    import torch

    width = max(len(e.input_ids) for e in batch)
    ids = [e.input_ids + [pad_id] * (width - len(e.input_ids)) for e in batch]
    labels = [e.labels + [IGNORE_INDEX] * (width - len(e.labels)) for e in batch]
    mask = [[1] * len(e.input_ids) + [0] * (width - len(e.input_ids)) for e in batch]
    return {
        "input_ids": torch.tensor(ids, dtype=torch.long),
        "labels": torch.tensor(labels, dtype=torch.long),
        "attention_mask": torch.tensor(mask, dtype=torch.long),
    }
