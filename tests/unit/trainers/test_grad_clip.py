"""The trainer's gradient clipping (engine.make_trainer_class): transformers' norm and clipped
gradients, for a LoRA model whose frozen weights have none, from a parameter list made once."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from unittest import mock

import pytest

from tests.unit.trainers import tiny
from trainjob.trainers.llm import engine

pytest.importorskip("trl")


def lora_trainer(model_dir: Path, out: Path) -> Any:
    import datasets  # type: ignore[import-untyped]
    import transformers
    from peft import LoraConfig

    transformers.set_seed(0)
    args = tiny.sft_args(out, max_grad_norm=1e-3)  # small enough to clip
    data = datasets.Dataset.from_list([{"input_ids": [5, 6, 7, 8, 9]}] * 4)
    return engine.make_trainer_class(torchtune=False)(
        model=str(model_dir),
        args=args,
        train_dataset=data,
        peft_config=LoraConfig(r=2, lora_alpha=4, target_modules=["q_proj", "v_proj"]),
    )


def test_clipping_equals_transformers_and_lists_the_parameters_once(
    model_dir: Path, tmp_path: Path
) -> None:
    import torch
    import transformers

    t = lora_trainer(model_dir, tmp_path)
    model = t.model
    model.train()
    inputs = t._prepare_inputs(next(iter(t.get_train_dataloader())))
    model(**inputs).loss.backward()
    with_grads = [p for p in model.parameters() if p.grad is not None]
    assert 0 < len(with_grads) < len(list(model.parameters()))  # frozen weights have none
    before = [p.grad.clone() for p in with_grads]

    want = transformers.Trainer._clip_grad_norm(t, model)  # type: ignore[no-untyped-call]
    want_grads = [p.grad.clone() for p in with_grads]
    for p, g in zip(with_grads, before, strict=True):
        p.grad = g.clone()
    with mock.patch.object(model, "parameters", wraps=model.parameters) as listed:
        got = t._clip_grad_norm(model)
        for p, g in zip(with_grads, before, strict=True):
            p.grad = g.clone()
        again = t._clip_grad_norm(model)
    assert listed.call_count == 1
    assert float(want) > 1e-3  # it clipped
    torch.testing.assert_close(got, want)
    torch.testing.assert_close(again, want)
    for p, g in zip(with_grads, want_grads, strict=True):
        torch.testing.assert_close(p.grad, g)
