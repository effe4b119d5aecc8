"""The instruct dataset: files and formats, splits, column_map, prompts and label masking."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest

from trainjob.trainers.llm import data
from trainjob.trainers.llm.config import DatasetConfig
from trainjob.trainers.llm.errors import TrainerError

ROWS = [
    {"instruction": "repeat", "input": "apple", "output": "apple apple"},
    {"instruction": "next", "input": "pear", "output": "plum"},
]


def write(path: Path, source: str, rows: list[dict[str, str]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if source == "json":
        path.write_text(json.dumps(rows))
    elif source == "jsonl":
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    elif source == "csv":
        with path.open("w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
    else:
        pa = pytest.importorskip("pyarrow")
        import pyarrow.parquet as pq

        pq.write_table(pa.Table.from_pylist(rows), path)
    return path


@pytest.mark.parametrize("source", ["json", "jsonl", "csv", "parquet"])
def test_each_format_reads_the_same_rows_from_a_data_dir(tmp_path: Path, source: str) -> None:
    write(tmp_path / "data" / f"train-00000-of-00001.{source}", source, ROWS)
    (tmp_path / "data" / "README.md").write_text("not data")
    ds = DatasetConfig(source=source, data_dir=str(tmp_path / "data"))
    assert data.load_rows(ds) == ROWS


def test_data_dir_prefers_files_named_for_the_split_and_infers_the_format(tmp_path: Path) -> None:
    write(tmp_path / "d" / "train.jsonl", "jsonl", ROWS)
    write(tmp_path / "d" / "test.jsonl", "jsonl", ROWS[:1])
    assert data.load_rows(DatasetConfig(data_dir=str(tmp_path / "d"))) == ROWS
    assert data.load_rows(DatasetConfig(data_dir=str(tmp_path / "d"), split="test")) == ROWS[:1]


def test_files_named_for_no_split_are_the_train_split_and_other_splits_are_errors(
    tmp_path: Path,
) -> None:
    write(tmp_path / "d" / "part-0.jsonl", "jsonl", ROWS)
    assert (
        data.load_rows(DatasetConfig(data_dir=str(tmp_path / "d"), split="train[:1]")) == (ROWS[:1])
    )
    with pytest.raises(TrainerError, match=r'^dataset.split=validation: no file under .* has "va'):
        data.load_rows(DatasetConfig(data_dir=str(tmp_path / "d"), split="validation"))


def test_data_files_and_split_slices(tmp_path: Path) -> None:
    rows = [{"input": str(i), "output": str(i)} for i in range(10)]
    f = write(tmp_path / "all.json", "json", rows)
    assert len(data.load_rows(DatasetConfig(data_files=(str(f),), split="train[:80%]"))) == 8
    assert data.load_rows(DatasetConfig(data_files=(str(f),), split="train[7:]")) == rows[7:]


def test_an_empty_dataset_is_a_one_line_error(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(TrainerError) as err:
        data.load_rows(DatasetConfig(data_dir=str(tmp_path / "empty")))
    assert str(err.value) == (
        f"empty dataset: dataset.data_dir={tmp_path / 'empty'} has no json/jsonl/csv/parquet "
        "files; put the data there or set dataset.source to its format"
    )
    f = write(tmp_path / "none.json", "json", [])
    with pytest.raises(
        TrainerError, match=r"^empty dataset: .*none.json has no rows in split train"
    ):
        data.load_rows(DatasetConfig(data_files=(str(f),)))


def test_the_prompt_is_masked_and_the_response_ends_with_eos(tokenizer: Any) -> None:
    ds = DatasetConfig(data_dir="x")
    ex = data.tokenize_row(ROWS[0], ds, tokenizer, None)
    assert ex is not None
    prompt = "### Instruction:\nrepeat\n\n### Input:\napple\n\n### Response:\n"
    prompt_ids = tokenizer.encode(prompt, add_special_tokens=True)
    assert prompt_ids[0] == tokenizer.bos_token_id
    answer = [*tokenizer.encode("apple apple", add_special_tokens=False), tokenizer.eos_token_id]
    assert ex.input_ids == prompt_ids + answer
    assert ex.labels == [data.IGNORE_INDEX] * len(prompt_ids) + answer


def test_train_on_input_keeps_the_prompt_labels(tokenizer: Any) -> None:
    ex = data.tokenize_row(
        ROWS[0], DatasetConfig(data_dir="x", train_on_input=True), tokenizer, None
    )
    assert ex is not None and ex.labels == ex.input_ids


def test_column_map_renames_columns_and_a_missing_one_says_how_to_map_it(tokenizer: Any) -> None:
    row = {"question": "pear", "answer": "plum"}
    ds = DatasetConfig(data_dir="x", column_map={"input": "question", "output": "answer"})
    prompt, response = data.prompt_and_response(row, ds, chat=False)
    assert (prompt, response) == ("### Input:\npear\n\n### Response:\n", "plum")
    with pytest.raises(TrainerError) as err:
        data.prompt_and_response(row, DatasetConfig(data_dir="x"), chat=False)
    assert str(err.value) == (
        'dataset has no column "input" (columns: question, answer); '
        "map it with dataset.column_map={'input': '<column>'}"
    )


def test_new_system_prompt_and_a_chat_template(tokenizer: Any) -> None:
    from tests.unit.trainers import tiny

    template = (
        "{% for m in messages %}{{ m['role'] }} : {{ m['content'] }} {% endfor %}"
        "{% if add_generation_prompt %}assistant : {% endif %}"
    )
    chat_tok = tiny.tokenizer(chat_template=template)
    ds = DatasetConfig(data_dir="x", new_system_prompt="Say")
    ex = data.tokenize_row(ROWS[1], ds, chat_tok, None)
    assert ex is not None
    prompt_ids = chat_tok.encode(
        "system : Say user : next\n\npear assistant : ", add_special_tokens=False
    )
    answer = [*chat_tok.encode("plum", add_special_tokens=False), chat_tok.eos_token_id]
    assert ex.input_ids == prompt_ids + answer
    assert ex.labels == [data.IGNORE_INDEX] * len(prompt_ids) + answer
    plain, _ = data.prompt_and_response(ROWS[1], ds, chat=False)
    assert isinstance(plain, str) and plain.startswith("Say\n\n### Instruction:\nnext")


def test_truncation_drops_rows_with_no_response_left(tokenizer: Any) -> None:
    ds = DatasetConfig(data_dir="x")
    examples, dropped = data.tokenize_rows(ROWS, ds, tokenizer, max_seq_len=64)
    assert (len(examples), dropped) == (2, 0)
    with pytest.raises(TrainerError, match=r"^empty dataset: no row has a response left"):
        data.tokenize_rows(ROWS, ds, tokenizer, max_seq_len=3)


def test_collate_pads_ids_labels_and_mask() -> None:
    pytest.importorskip("torch")
    batch = data.collate([data.Example([1, 2, 3], [-100, 2, 3]), data.Example([4], [4])], pad_id=0)
    assert batch["input_ids"].tolist() == [[1, 2, 3], [4, 0, 0]]
    assert batch["labels"].tolist() == [[-100, 2, 3], [4, -100, -100]]
    assert batch["attention_mask"].tolist() == [[1, 1, 1], [1, 0, 0]]
