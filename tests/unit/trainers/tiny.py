"""A tiny Hugging Face checkpoint and dataset, built in a test's tmp_path (nothing downloaded).

A WordLevel tokenizer trained on the test's own text (``tokenizers``), wrapped in
PreTrainedTokenizerFast with bos/eos/pad tokens; a 2-layer Llama with hidden size 32; an
Alpaca-style dataset. Used by the trainer's unit tests and tests/e2e/test_llm_trainer.py.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

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
    fast = PreTrainedTokenizerFast(
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
