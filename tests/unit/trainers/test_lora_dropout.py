"""LoRA's CPU dropout (trainers/llm/dropout.py): torch's rate and scaling, the gradient through
the same mask, masks set by torch's seed and RNG state (a resumed run draws the same), nn.Dropout
itself where it is not used, and peft's LoRA layers swapped with their parameters untouched."""

from __future__ import annotations

import copy
import math
from pathlib import Path
from typing import Any

import pytest

from tests.unit.trainers import tiny
from tests.unit.trainers.test_dora_forward import ids, llama
from trainjob.trainers.llm import dropout, engine

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("p", [0.05, 0.3, 0.9])
def test_the_rate_and_the_scaling_are_torchs(p: float) -> None:
    torch.manual_seed(0)
    x = torch.rand(1000, 1000) + 0.5  # no zeros of its own
    y = dropout.dropout(x, p)
    n = x.numel()
    dropped = float((y == 0).sum()) / n
    assert abs(dropped - p) < 5 * math.sqrt(p * (1 - p) / n)  # 5 sigma
    kept = y != 0
    torch.testing.assert_close(y[kept], x[kept] / (1 - p))
    assert float(y.mean()) == pytest.approx(float(x.mean()), rel=0.01)


def test_the_gradient_goes_through_the_forwards_mask() -> None:
    torch.manual_seed(1)
    x = torch.randn(64, 48, requires_grad=True)
    y = dropout.dropout(x, 0.2)
    upstream = torch.randn(64, 48)
    y.backward(upstream)
    assert x.grad is not None
    kept = (y != 0).to(x.dtype)
    torch.testing.assert_close(x.grad, upstream * kept / 0.8)
    assert 0 < float(kept.mean()) < 1


def test_masks_follow_torchs_seed_and_rng_state() -> None:
    x = torch.ones(32, 32)
    torch.manual_seed(5)
    a = dropout.dropout(x, 0.5)
    torch.manual_seed(5)
    b = dropout.dropout(x, 0.5)
    c = dropout.dropout(x, 0.5)  # the generator moved on
    assert torch.equal(a, b)
    assert not torch.equal(b, c)
    # a checkpoint's RNG state (transformers saves torch's) gives the same next mask on resume
    state = torch.random.get_rng_state()
    d = dropout.dropout(x, 0.5)
    torch.random.set_rng_state(state)
    assert torch.equal(dropout.dropout(x, 0.5), d)


def test_nn_dropout_itself_in_eval_mode_at_0_and_1_and_in_place() -> None:
    cls = dropout.module_class()
    x = torch.randn(8, 8)
    module = cls(p=0.5)
    module.eval()
    assert torch.equal(module(x), x)
    module.train()
    assert torch.equal(cls(p=0.0)(x), x)
    assert torch.equal(cls(p=1.0)(x), torch.zeros_like(x))
    torch.manual_seed(2)
    want = torch.nn.functional.dropout(x.clone(), 0.5, training=True)
    torch.manual_seed(2)
    got = cls(p=0.5, inplace=True)(x.clone())
    assert torch.equal(got, want)  # in place: torch's own kernel, its own draws
    assert isinstance(cls(p=0.5), torch.nn.Dropout)


def test_install_swaps_peft_lora_dropouts_only_and_keeps_the_state_dict(tmp_path: Path) -> None:
    theirs = llama(dropout=0.05, use_dora=False)
    ours = copy.deepcopy(theirs)
    keys = set(ours.state_dict())
    assert dropout.install(ours) == 4  # q_proj and v_proj of 2 layers
    assert dropout.install(ours) == 0  # once
    assert set(ours.state_dict()) == keys
    kinds = {type(m).__name__ for m in ours.modules() if isinstance(m, torch.nn.Dropout)}
    assert kinds == {"CpuDropout"}
    assert dropout.install(llama(dropout=0.0, use_dora=False)) == 0  # peft's Identity
    # eval: the same logits as peft's; training: a loss within what another seed changes
    ours.eval()
    theirs.eval()
    with torch.no_grad():
        torch.testing.assert_close(ours(input_ids=ids()).logits, theirs(input_ids=ids()).logits)
    ours.train()
    loss = ours(input_ids=ids(), labels=ids()).loss
    loss.backward()
    grads = [p.grad for n, p in ours.named_parameters() if "lora_A" in n]
    assert grads and all(g is not None and float(g.abs().max()) > 0 for g in grads)
    ours.save_pretrained(str(tmp_path / "adapter"))
    from peft import PeftModel

    from tests.unit.trainers.test_dora_forward import base_llama

    fresh = PeftModel.from_pretrained(base_llama(), str(tmp_path / "adapter"))
    assert not any(type(m).__name__ == "CpuDropout" for m in fresh.modules())


def test_the_trainer_installs_it_on_lora_dora_and_leaves_full_models_alone(
    model_dir: Path, tmp_path: Path
) -> None:
    import datasets  # type: ignore[import-untyped]
    from peft import LoraConfig

    args = tiny.sft_args(tmp_path)
    data = datasets.Dataset.from_list([{"input_ids": [5, 6, 7, 8]}] * 4)

    def dropouts(peft_config: Any) -> set[str]:
        trainer = engine.make_trainer_class(torchtune=False)(
            model=str(model_dir), args=args, train_dataset=data, peft_config=peft_config
        )
        return {type(m).__name__ for m in trainer.model.modules() if "Dropout" in type(m).__name__}

    for use_dora in (False, True):
        config = LoraConfig(
            r=2, lora_alpha=4, lora_dropout=0.1, target_modules=["q_proj"], use_dora=use_dora
        )
        assert dropouts(config) == {"CpuDropout"}
    assert "CpuDropout" not in dropouts(None)
