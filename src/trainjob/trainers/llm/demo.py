"""A tiny Llama, its tokenizer and an Alpaca-style dataset, made here: for demos and tests.

No hub can be reached from every machine, and a 1B model is too big for a laptop demo: this builds a
Hugging Face checkpoint (a WordLevel tokenizer over the dataset's words, wrapped in
PreTrainedTokenizerFast; a 2-layer Llama with hidden size 32) and a dataset the LLM trainer learns in
seconds. ``python -m trainjob.trainers.llm.demo DIR`` writes ``DIR/model`` and
``DIR/dataset/data/train-00000-of-00001.parquet``, the layout the torchtune runtimes read, for
``examples/llm-lora.yaml``. The trainer's tests use the same builders.

The docs' folder is ``/tmp/trainjob-llm-demo`` (the one ``examples/llm-lora.yaml`` reads, a
manifest naming no user's home). ``/tmp`` is shared: a folder there that another user made (or
a link) is refused with a one-line error naming the fix (a folder of one's own, and the YAML's
two ``storageUri`` lines), rather than written into or read from.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from trainjob import extras

WORDS = ["apple", "pear", "plum", "fig", "kiwi", "lime", "date", "melon"]
TEMPLATE_TEXT = "### Instruction : ### Input : ### Response : You are a helpful bot . Say"


def rows() -> list[dict[str, str]]:
    """Alpaca-style rows: repeat a word twice, or name the next word in a fixed list."""
    out = []
    for i, word in enumerate(WORDS):
        out.append({"instruction": "repeat", "input": word, "output": f"{word} {word}"})
        nxt = WORDS[(i + 1) % len(WORDS)]
        out.append({"instruction": "next", "input": word, "output": nxt})
    return out


def tokenizer(chat_template: str | None = None) -> Any:
    """A fast WordLevel tokenizer over the words of :func:`rows` and the prompt template."""
    from tokenizers import Tokenizer, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.WordLevel(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    trainer = trainers.WordLevelTrainer(special_tokens=["<pad>", "<unk>", "<bos>", "<eos>"])
    corpus = [TEMPLATE_TEXT, "repeat next system user assistant"]
    corpus += [" ".join(r.values()) for r in rows()]
    tok.train_from_iterator(corpus, trainer=trainer)
    tok.post_processor = processors.TemplateProcessing(
        single="<bos> $A", special_tokens=[("<bos>", tok.token_to_id("<bos>"))]
    )
    fast = PreTrainedTokenizerFast(  # type: ignore[no-untyped-call]
        tokenizer_object=tok,
        bos_token="<bos>",
        eos_token="<eos>",
        pad_token="<pad>",
        unk_token="<unk>",
    )
    if chat_template is not None:
        fast.chat_template = chat_template
    return fast


def checkpoint(path: Path, tied: bool = True) -> Path:
    """Save a tiny Llama and its tokenizer to ``path`` as a Hugging Face checkpoint dir."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    tok = tokenizer()
    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=len(tok),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=128,
        tie_word_embeddings=tied,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
    )
    LlamaForCausalLM(config).save_pretrained(str(path))
    tok.save_pretrained(str(path))
    return path


def dataset(path: Path, repeat: int = 1) -> Path:
    """Write :func:`rows` (``repeat`` times) as a JSON array file; returns the file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(rows() * repeat))
    return path


def parquet(path: Path, repeat: int = 2) -> Path:
    """Write :func:`rows` (``repeat`` times) as a parquet file; returns the file."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows() * repeat), path)
    return path


def _not_ours(folder: Path) -> str | None:
    """Why ``folder`` is not this user's to write the demo into (a link, another user's folder);
    None when it is, or does not exist yet (it is made, as this user)."""
    try:
        st = os.lstat(folder)
    except FileNotFoundError:
        return None
    fix = (
        "pass a folder of your own, e.g. python -m trainjob.trainers.llm.demo ~/trainjob-llm-demo, "
        "and use it in the job's two storageUri lines"
    )
    if os.path.islink(folder):
        return f"{folder} is a link: {fix}"
    if st.st_uid != os.getuid():
        return f"{folder} belongs to another user: {fix}"
    return None


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m trainjob.trainers.llm.demo",
        description="Write a tiny Llama (DIR/model) and an Alpaca-style dataset (DIR/dataset).",
    )
    parser.add_argument("dir", type=Path, help="where to write model/ and dataset/")
    args = parser.parse_args(argv)
    foreign = _not_ours(args.dir)
    if foreign:
        print(f"error: {foreign}", file=sys.stderr)
        return 1
    missing = extras.message("the LLM demo", ("torch", "transformers", "pyarrow"))
    if missing:
        print(f"error: {missing}", file=sys.stderr)
        return 1
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]  # noise for 100 KiB
    model = checkpoint(args.dir / "model")
    data = parquet(args.dir / "dataset" / "data" / "train-00000-of-00001.parquet")
    print(f"model: {model} ({len(tokenizer())} tokens, 2 layers)")
    print(f"dataset: {data} ({len(rows()) * 2} rows)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
