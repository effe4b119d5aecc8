"""The fused CPU RMSNorm and rotary embedding (trainers/llm/fused.py): transformers' outputs and
gradients, used only where the code is Llama's and the tensors fp32 on the CPU, the state dict
and a saved model untouched, and installed by the trainer."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from tests.unit.trainers import tiny
from tests.unit.trainers.test_dora_forward import base_llama, ids
from trainjob.trainers.llm import engine, fused

torch = pytest.importorskip("torch")
modeling_llama = pytest.importorskip("transformers.models.llama.modeling_llama")


@pytest.fixture(autouse=True)
def restore_rope(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test starts from transformers' own rotary embedding (a trainer built by an earlier
    test patched it for the process), and leaves the modules as they were."""
    from transformers.models.gemma import modeling_gemma
    from transformers.models.qwen3 import modeling_qwen3

    for mod in (modeling_llama, modeling_gemma, modeling_qwen3):
        current = getattr(mod, fused.ROPE)
        monkeypatch.setattr(mod, fused.ROPE, getattr(current, "original", current))


def grads_of(fn: Any, *inputs: Any) -> tuple[Any, list[Any]]:
    """``fn(*inputs)``'s output and the gradients of a fixed random projection of it."""
    for x in inputs:
        x.grad = None
    out = fn(*inputs)
    outs = out if isinstance(out, tuple) else (out,)
    gen = torch.Generator().manual_seed(3)
    loss = sum((o * torch.randn(o.shape, generator=gen)).sum() for o in outs)
    loss.backward()
    return out, [x.grad.clone() for x in inputs if x.requires_grad]


@pytest.mark.parametrize("shape", [(3, 7, 32), (2, 5, 4, 16)])  # hidden states; Qwen3's q_norm
@pytest.mark.parametrize("train_weight", [False, True])  # LoRA (frozen) and full fine-tunes
def test_rms_norm_gives_llamas_outputs_and_gradients(
    shape: tuple[int, ...], train_weight: bool
) -> None:
    theirs = modeling_llama.LlamaRMSNorm(shape[-1], eps=1e-6)
    with torch.no_grad():
        theirs.weight.uniform_(0.5, 1.5)
    theirs.weight.requires_grad_(train_weight)
    ours = copy.deepcopy(theirs)
    ours.__class__ = fused.norm_class(modeling_llama.LlamaRMSNorm)
    x = torch.randn(shape, generator=torch.Generator().manual_seed(1)) * 3
    x.requires_grad_(True)
    params = [x, theirs.weight] if train_weight else [x]
    out_t, grads_t = grads_of(lambda *_: theirs(x), *params)
    mine = [x, ours.weight] if train_weight else [x]
    out_o, grads_o = grads_of(lambda *_: ours(x), *mine)
    torch.testing.assert_close(out_o, out_t, rtol=1e-6, atol=1e-6)
    assert len(grads_o) == len(grads_t) == len(params)
    for a, b in zip(grads_o, grads_t, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)


def test_rms_norm_runs_transformers_code_for_bf16() -> None:
    theirs = modeling_llama.LlamaRMSNorm(16)
    ours = copy.deepcopy(theirs)
    ours.__class__ = fused.norm_class(modeling_llama.LlamaRMSNorm)
    x = torch.randn(2, 3, 16).to(torch.bfloat16)
    assert torch.equal(ours(x), theirs(x))  # bit for bit: the same code


def llama_rope(dim: int, seq: int) -> tuple[Any, Any]:
    """Llama's cos and sin for positions 0..seq-1, shaped (1, seq, dim) as its model passes them."""
    config = modeling_llama.LlamaConfig(hidden_size=dim * 4, num_attention_heads=4)
    rotary = modeling_llama.LlamaRotaryEmbedding(config)
    x = torch.zeros(1, seq, dim)
    return rotary(x, torch.arange(seq)[None])  # type: ignore[no-any-return]


@pytest.mark.parametrize("kv_heads", [4, 2])  # multi-head and grouped-query attention
def test_rope_gives_llamas_outputs_and_gradients(kv_heads: int) -> None:
    cos, sin = llama_rope(16, 9)
    gen = torch.Generator().manual_seed(2)
    q = torch.randn(2, 4, 9, 16, generator=gen).requires_grad_(True)
    k = torch.randn(2, kv_heads, 9, 16, generator=gen).requires_grad_(True)
    original = modeling_llama.apply_rotary_pos_emb
    ours = fused.fused_rope(original)
    out_t, grads_t = grads_of(lambda a, b: original(a, b, cos, sin), q, k)
    out_o, grads_o = grads_of(lambda a, b: ours(a, b, cos, sin), q, k)
    for a, b in zip([*out_o, *grads_o], [*out_t, *grads_t], strict=True):
        torch.testing.assert_close(a, b, rtol=1e-6, atol=1e-6)


def test_rope_runs_transformers_code_where_it_does_not_apply() -> None:
    seen: list[str] = []

    def original(q: Any, k: Any, cos: Any, sin: Any, unsqueeze_dim: int = 1) -> Any:
        seen.append("original")
        return modeling_llama.apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim)

    ours = fused.fused_rope(original)
    cos, sin = llama_rope(16, 5)
    q = torch.randn(1, 2, 5, 16)
    ours(q, q, cos, sin)
    assert seen == []
    ours(q.to(torch.bfloat16), q.to(torch.bfloat16), cos.bfloat16(), sin.bfloat16())
    ours(q, q, cos.requires_grad_(True), sin)  # a learned position embedding
    assert seen == ["original"] * 2


def test_install_fuses_llama_code_only_and_keeps_the_model(tmp_path: Path) -> None:
    theirs = base_llama()
    ours = copy.deepcopy(theirs)
    keys = {k: v.clone() for k, v in ours.state_dict().items()}
    # transformers' numbers first: the rotary embedding is patched for the whole process
    theirs.train()
    loss_t = theirs(input_ids=ids(), labels=ids()).loss
    loss_t.backward()
    theirs.eval()
    prompt = ids()[:1, :4]
    same = {"max_new_tokens": 5, "do_sample": False}
    tokens_t = theirs.generate(prompt, **same)
    # 2 layers x 2 norms and the final norm; the rotary embedding of modeling_llama
    assert fused.install(ours) == (5, 1)
    assert fused.install(ours) == (0, 0)  # once
    assert modeling_llama.apply_rotary_pos_emb.original is not None
    assert set(ours.state_dict()) == set(keys)
    for k, v in ours.state_dict().items():
        assert torch.equal(v, keys[k])
    ours.train()
    loss_o = ours(input_ids=ids(), labels=ids()).loss
    torch.testing.assert_close(loss_o, loss_t, rtol=1e-6, atol=1e-6)
    loss_o.backward()
    for (name, a), (_, b) in zip(ours.named_parameters(), theirs.named_parameters(), strict=True):
        assert a.grad is not None, name
        scale = float(b.grad.abs().max())  # q_proj's and k_proj's are 1e-4 or so here
        assert scale > 0, name
        torch.testing.assert_close(a.grad, b.grad, rtol=1e-4, atol=1e-5 * scale)
    # generation with a KV cache takes the same tokens
    ours.eval()
    assert torch.equal(ours.generate(prompt, **same), tokens_t)
    ours.save_pretrained(str(tmp_path / "m"))
    fresh = type(theirs).from_pretrained(str(tmp_path / "m"))
    assert not any(
        type(m) is not type(f) for m, f in zip(fresh.modules(), theirs.modules(), strict=True)
    )


def one_layer(model_type: str, kv_heads: int = 2) -> Any:
    """A one-layer causal LM of transformers' ``model_type`` (hidden 32, 2 heads of 16)."""
    from transformers import AutoConfig, AutoModelForCausalLM

    torch.manual_seed(0)
    config = AutoConfig.for_model(
        model_type,
        vocab_size=64,
        hidden_size=32,
        intermediate_size=48,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=kv_heads,
        head_dim=16,
    )
    return AutoModelForCausalLM.from_config(config)  # type: ignore[no-untyped-call]


def test_install_leaves_other_norms_alone() -> None:
    gemma = one_layer("gemma")
    norms, _ = fused.install(gemma)  # Gemma's rope is Llama's; its norm (1 + weight) is not
    assert norms == 0
    assert {type(m).__name__ for m in gemma.modules() if "Norm" in type(m).__name__} == {
        "GemmaRMSNorm"
    }


def test_install_fuses_qwen3_including_its_head_norms() -> None:
    theirs = one_layer("qwen3", kv_heads=1)
    ours = copy.deepcopy(theirs)
    x = torch.randint(0, 64, (2, 6))
    logits = theirs(input_ids=x).logits
    assert fused.install(base_llama()) == (5, 1)  # Llama's first: Qwen3's is still recognised
    assert fused.install(ours) == (5, 1)  # input, post-attention, q_norm, k_norm; final
    torch.testing.assert_close(ours(input_ids=x).logits, logits, rtol=1e-5, atol=1e-6)


def test_the_trainer_installs_it_on_the_cpu(model_dir: Path, tmp_path: Path) -> None:
    import datasets  # type: ignore[import-untyped]

    data = datasets.Dataset.from_list([{"input_ids": [5, 6, 7, 8]}] * 4)

    def norm_classes(**overrides: Any) -> set[type]:
        trainer = engine.make_trainer_class(torchtune=False)(
            model=str(model_dir), args=tiny.sft_args(tmp_path, **overrides), train_dataset=data
        )
        return {type(m) for m in trainer.model.modules() if "RMSNorm" in type(m).__name__}

    (fused_cls,) = norm_classes()
    assert fused_cls is fused.norm_class(modeling_llama.LlamaRMSNorm)
    assert hasattr(modeling_llama.apply_rotary_pos_emb, "original")
