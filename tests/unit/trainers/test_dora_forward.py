"""DoRA's training forward (trainers/llm/dora.py) against peft's own: the same outputs and
gradients without dropout, the same step losses (to 1e-4) with it, torchtune's formula for the
dropped-out input, and peft's parameters, saved adapter and merged model unchanged."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from tests.unit.trainers import tiny
from trainjob.trainers.llm import dora, engine

pytest.importorskip("peft")


def base_llama() -> Any:
    """A tiny Llama, the same weights every call."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=64,
        hidden_size=32,
        intermediate_size=48,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=4,
        max_position_embeddings=64,
        pad_token_id=0,
        eos_token_id=1,
        bos_token_id=1,
    )
    return LlamaForCausalLM(config)


def llama(dropout: float, use_dora: bool = True, moved: bool = True) -> Any:
    """:func:`base_llama` with DoRA (or LoRA) on q_proj and v_proj; ``moved``: its adapter off
    its initial point (B nonzero, magnitude not the column norm), so every DoRA term counts."""
    import torch
    from peft import LoraConfig, get_peft_model

    lora = LoraConfig(
        r=4,
        lora_alpha=8,
        lora_dropout=dropout,
        target_modules=["q_proj", "v_proj"],
        use_dora=use_dora,
        task_type="CAUSAL_LM",
    )
    model = get_peft_model(base_llama(), lora)
    if not moved:
        return model
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "lora_B" in name or "lora_magnitude_vector" in name:
                p.add_(0.05 * torch.randn_like(p))
    return model


def ids() -> Any:
    import torch

    return torch.randint(2, 64, (3, 10), generator=torch.Generator().manual_seed(1))


def loss_and_grads(model: Any, seed: int = 7) -> tuple[Any, dict[str, Any]]:
    import torch

    model.train()
    model.zero_grad(set_to_none=True)
    torch.manual_seed(seed)  # the same dropout masks for both models
    loss = model(input_ids=ids(), labels=ids()).loss
    loss.backward()
    grads = {n: p.grad.clone() for n, p in model.named_parameters() if p.requires_grad}
    return loss.detach(), grads


def test_without_dropout_the_loss_and_every_gradient_equal_peft() -> None:
    import torch

    theirs = llama(dropout=0.0)
    ours = copy.deepcopy(theirs)
    assert dora.install(ours) == 4  # q_proj and v_proj of 2 layers
    want, want_g = loss_and_grads(theirs)
    got, got_g = loss_and_grads(ours)
    assert float(got) == pytest.approx(float(want), abs=1e-6)
    assert got_g.keys() == want_g.keys()
    assert any("lora_magnitude_vector" in n for n in got_g)
    for name, g in want_g.items():
        assert float(g.abs().max()) > 0, name
        torch.testing.assert_close(got_g[name], g, rtol=1e-5, atol=1e-7, msg=name)


def test_a_biased_layer_keeps_its_bias_out_of_the_magnitude() -> None:
    import torch
    from peft import LoraConfig, get_peft_model

    class Net(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin = torch.nn.Linear(8, 6, bias=True)

        def forward(self, x: Any) -> Any:
            return self.lin(x)

    torch.manual_seed(0)
    theirs = get_peft_model(
        Net(),
        LoraConfig(r=2, lora_alpha=4, lora_dropout=0.0, target_modules=["lin"], use_dora=True),
    )
    peft_net: Any = theirs
    lin = peft_net.base_model.model.lin
    with torch.no_grad():
        lin.lora_B["default"].weight.normal_()
        lin.lora_magnitude_vector["default"].weight.mul_(1.3)
    ours = copy.deepcopy(theirs)
    assert dora.install(ours) == 1
    x = torch.randn(5, 8, requires_grad=True)
    outs, grads = [], []
    for model in (theirs, ours):
        model.train()
        xi = x.detach().clone().requires_grad_(True)
        out = model(xi)
        out.pow(2).sum().backward()
        outs.append(out.detach())
        grads.append([xi.grad, *(p.grad for p in model.parameters() if p.requires_grad)])
    torch.testing.assert_close(outs[1], outs[0])
    for got, want in zip(grads[1], grads[0], strict=True):
        torch.testing.assert_close(got, want)


def test_with_dropout_the_output_is_torchtunes_formula_and_step_losses_stay_peft_s() -> None:
    import torch
    import torch.nn.functional as F

    theirs = llama(dropout=0.1)
    ours = copy.deepcopy(theirs)
    dora.install(ours)

    # one layer: m / ||W + s BA||_c * (W x + s B A dropout(x)), the norm detached
    layer = ours.base_model.model.model.layers[0].self_attn.q_proj
    layer.train()
    x = torch.randn(3, 5, 32)
    a, b = layer.lora_A["default"].weight, layer.lora_B["default"].weight
    w, s = layer.get_base_layer().weight, layer.scaling["default"]
    m = layer.lora_magnitude_vector["default"].weight
    torch.manual_seed(3)
    dropped = F.dropout(x, 0.1, training=True)
    with torch.no_grad():
        norm = torch.linalg.norm(w + s * (b @ a), dim=1)
        want = (m / norm) * (x @ w.T + s * (dropped @ a.T @ b.T))
    torch.manual_seed(3)
    got = layer(x)
    torch.testing.assert_close(got.detach(), want)
    got.sum().backward()
    assert m.grad is not None and float(m.grad.abs().max()) > 0

    # training from peft's initial adapter, as a fine-tune starts: AdamW steps (the
    # benchmark's lr) of both on the same batches and dropout masks
    theirs = llama(dropout=0.1, moved=False)
    ours = copy.deepcopy(theirs)
    dora.install(ours)
    losses: list[list[float]] = [[], []]
    for i, model in enumerate((theirs, ours)):
        opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-4)
        for step in range(10):
            loss, _ = loss_and_grads(model, seed=step)
            opt.step()
            losses[i].append(float(loss))
    assert losses[1] == pytest.approx(losses[0], abs=1e-4)
    assert losses[1][-1] < losses[1][0]  # it trains
    # in eval mode both are peft's own forward (no dropout): the same logits for the same weights
    ours.load_state_dict(theirs.state_dict())
    ours.eval()
    theirs.eval()
    with torch.no_grad():
        torch.testing.assert_close(
            ours(input_ids=ids()).logits, theirs(input_ids=ids()).logits, rtol=0, atol=0
        )


def test_the_adapter_saves_loads_and_merges_with_plain_peft(tmp_path: Path) -> None:
    import torch
    from peft import PeftModel

    model = llama(dropout=0.05)
    stock_keys = set(model.state_dict())
    dora.install(model)
    assert set(model.state_dict()) == stock_keys
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-3)
    for step in range(3):
        loss_and_grads(model, seed=step)
        opt.step()
    model.eval()
    with torch.no_grad():
        want = model(input_ids=ids()).logits
    model.save_pretrained(str(tmp_path / "adapter"))

    # plain peft (nothing installed) on the same base weights
    fresh = PeftModel.from_pretrained(base_llama(), str(tmp_path / "adapter"))
    fresh.eval()
    with torch.no_grad():
        torch.testing.assert_close(fresh(input_ids=ids()).logits, want, rtol=1e-5, atol=1e-5)
        merged = fresh.merge_and_unload()
        torch.testing.assert_close(merged(input_ids=ids()).logits, want, rtol=1e-4, atol=1e-4)


def test_lora_layers_are_left_alone_and_the_trainer_installs_it(
    model_dir: Path, tmp_path: Path
) -> None:
    import datasets  # type: ignore[import-untyped]
    from peft import LoraConfig

    assert dora.install(llama(dropout=0.05, use_dora=False)) == 0
    args = tiny.sft_args(tmp_path)
    data = datasets.Dataset.from_list([{"input_ids": [5, 6, 7, 8]}] * 4)
    trainer = engine.make_trainer_class(torchtune=False)(
        model=str(model_dir),
        args=args,
        train_dataset=data,
        peft_config=LoraConfig(r=2, lora_alpha=4, target_modules=["q_proj"], use_dora=True),
    )
    kinds = {
        type(v).__name__
        for module in trainer.model.modules()
        for v in (getattr(module, "lora_variant", None) or {}).values()
    }
    assert kinds == {"FastDoraLinearVariant"}
