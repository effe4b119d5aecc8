"""Each table-stakes key, pinned by the training config it produces: packing, conversations
(``messages``), completion-only loss (``train_on_input``), activation checkpointing, clipping,
per-token loss across accumulation, eval split and interval, checkpoints every N steps and
resume, the merged model. The e2e run of one job using all of them together is
tests/e2e/test_llm_table_stakes.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from trainjob.trainers.llm import checkpoint, data, engine, overrides
from trainjob.trainers.llm import config as config_mod
from trainjob.trainers.llm.config import DatasetConfig

pytest.importorskip("trl")

BASE = ["output_dir=/out", "checkpointer.checkpoint_dir=/m", "dataset.data_dir=/d"]


def args(*overrides: str, world: int = 1) -> Any:
    cfg = config_mod.build(
        "lora_finetune_single_device", "llama3_2/1B_lora_single_device", [*BASE, *overrides]
    )
    return engine.training_arguments(cfg, cuda=False, world=world)


def checkpointing_on(a: Any) -> bool:
    return bool(getattr(a, "activation_checkpointing", getattr(a, "gradient_checkpointing", None)))


@pytest.mark.parametrize(
    ("overrides", "want"),
    [
        pytest.param(
            (),
            {
                "packing": False,
                "max_grad_norm": 0.0,
                "eval_strategy": "no",
                "save_strategy": "no",
                "gradient_accumulation_steps": 8,
                "per_device_train_batch_size": 4,
                "average_tokens_across_devices": True,
                "lr_scheduler_type": "cosine",
                "warmup_steps": 100,
                "seed": 0,
            },
            id="torchtune's llama3_2/1B_lora_single_device: no packing, no clipping, no eval, cosine with 100 warmup steps, seed 0",
        ),
        pytest.param(
            ("dataset.packed=True", "tokenizer.max_seq_len=64"),
            {"packing": True, "packing_strategy": "bfd", "max_length": 64},
            id="dataset.packed packs best-fit into sequences of tokenizer.max_seq_len",
        ),
        pytest.param(
            ("clip_grad_norm=1.5",),
            {"max_grad_norm": 1.5},
            id="clip_grad_norm clips the gradient norm",
        ),
        pytest.param(
            ("gradient_accumulation_steps=3", "batch_size=2"),
            {
                "gradient_accumulation_steps": 3,
                "per_device_train_batch_size": 2,
                "average_tokens_across_devices": True,
            },
            id="accumulation: the loss is normalised per token across micro-batches and ranks",
        ),
        pytest.param(
            ("dataset_val.split=validation",),
            {"eval_strategy": "epoch"},
            id="dataset_val.split gives an eval loss each epoch",
        ),
        pytest.param(
            ("dataset_val.split=validation", "run_val_every_n_steps=3"),
            {"eval_strategy": "steps", "eval_steps": 3},
            id="run_val_every_n_steps gives an eval loss every N steps",
        ),
        pytest.param(
            ("save_every_n_steps=5",),
            {"save_strategy": "steps", "save_steps": 5, "save_only_model": False},
            id="save_every_n_steps saves a resumable checkpoint (optimizer, scheduler, RNG) every N steps",
        ),
        pytest.param(
            ("seed=7",),
            {"seed": 7, "data_seed": 7},
            id="seed seeds the run and its data order",
        ),
        pytest.param(
            ("lr_scheduler=null",),
            {"lr_scheduler_type": "constant", "warmup_steps": 0},
            id="lr_scheduler=null keeps the rate constant",
        ),
    ],
)
def test_a_key_sets_the_training_config(overrides: tuple[str, ...], want: dict[str, Any]) -> None:
    a = args(*overrides)
    got = {name: getattr(a, name) for name in want}
    assert got == want
    assert a.output_dir == "/out/checkpoints"


def test_enable_activation_checkpointing_turns_it_on_without_reentrancy() -> None:
    assert not checkpointing_on(args())
    on = args("enable_activation_checkpointing=True")
    assert checkpointing_on(on)
    kwargs = (
        getattr(on, "activation_checkpointing_kwargs", None) or on.gradient_checkpointing_kwargs
    )
    assert kwargs == {"use_reentrant": False}


def test_resume_and_the_merged_model_are_on_unless_turned_off() -> None:
    cfg = config_mod.build("lora_finetune_single_device", "llama3_2/1B_lora_single_device", BASE)
    assert (cfg.resume_from_checkpoint, cfg.save_adapter_weights_only) == (True, False)
    off = config_mod.build(
        "lora_finetune_single_device",
        "llama3_2/1B_lora_single_device",
        [*BASE, "resume_from_checkpoint=False", "save_adapter_weights_only=True"],
    )
    assert (off.resume_from_checkpoint, off.save_adapter_weights_only) == (False, True)


TEMPLATE = (
    "{% for m in messages %}{{ m['role'] }} : {{ m['content'] }} <eos> {% endfor %}"
    "{% if add_generation_prompt %}assistant : {% endif %}"
)
CONVERSATION = {
    "messages": [
        {"role": "user", "content": "repeat apple"},
        {"role": "assistant", "content": "apple apple"},
        {"role": "user", "content": "next apple"},
        {"role": "assistant", "content": "pear"},
    ]
}


def test_a_conversation_learns_only_the_assistants_replies() -> None:
    from tests.unit.trainers import tiny

    tok = tiny.tokenizer(chat_template=TEMPLATE)
    ds = DatasetConfig(component=overrides.CHAT_DATASET, data_dir="x")
    ex = data.tokenize_row(CONVERSATION, ds, tok, None)
    assert ex is not None
    learned = [
        i for i, label in zip(ex.input_ids, ex.labels, strict=True) if label != data.IGNORE_INDEX
    ]
    assert tok.decode(learned) == "apple apple <eos> pear <eos>"
    assert tok.decode(ex.input_ids) == (
        "user : repeat apple <eos> assistant : apple apple <eos> user : next apple <eos> "
        "assistant : pear <eos>"
    )
    everything = data.tokenize_row(
        CONVERSATION,
        DatasetConfig(component=overrides.CHAT_DATASET, data_dir="x", train_on_input=True),
        tok,
        None,
    )
    assert everything is not None and everything.labels == everything.input_ids


def test_sharegpt_conversations_read_as_openai_ones() -> None:
    sharegpt = {
        "conversations": [
            {"from": "human", "value": "repeat apple"},
            {"from": "gpt", "value": "apple apple"},
        ]
    }
    ds = DatasetConfig(
        component=overrides.CHAT_DATASET,
        data_dir="x",
        conversation_column="conversations",
        conversation_style="sharegpt",
    )
    assert data.conversation(sharegpt, ds) == [
        {"role": "user", "content": "repeat apple"},
        {"role": "assistant", "content": "apple apple"},
    ]


def test_only_a_checkpoint_marked_complete_is_resumed_and_newer_cut_short_ones_are_listed(
    tmp_path: Path,
) -> None:
    root = Path(checkpoint.checkpoints_dir(str(tmp_path)))
    for step in (2, 4, 6):
        (root / f"checkpoint-{step}").mkdir(parents=True)
    assert checkpoint.newest_complete(str(tmp_path)) == (
        None,
        [str(root / "checkpoint-6"), str(root / "checkpoint-4"), str(root / "checkpoint-2")],
    )
    checkpoint.mark_complete(str(root), 2)
    checkpoint.mark_complete(str(root), 4)
    assert not list(root.glob("*/.*.tmp"))
    assert checkpoint.newest_complete(str(tmp_path)) == (
        str(root / "checkpoint-4"),
        [str(root / "checkpoint-6")],
    )
    assert checkpoint.newest_complete(str(tmp_path / "nothing")) == (None, [])
