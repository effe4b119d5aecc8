"""Llama-family RMSNorm and rotary embedding in fewer passes over memory, on the CPU.

transformers writes both as chains of tensor operations, and autograd runs each one and its
backward separately: RMSNorm is six operations forward (a cast, a square, a mean, an add, a
reciprocal square root, two products) with a temporary each, the rotary embedding builds
``rotate_half`` by negating and concatenating slices of q and k, and its backward fills a tensor of
zeros for every slice. On the CPU, where these are memory-bound passes over each layer's
activations and every operation pays Python and dispatch, they were 6-10% of a step of
``benchmarks/finetune.py``'s LoRA and QLoRA runs on one thread (torch's profiler: ``mul``,
``fill_``, ``slice_backward``, ``pow``, ``rsqrt``). Here each is one autograd function: RMSNorm's
forward is a dot product and two products, its backward three passes with the gradient
formula written out; the rotary embedding is a product and two half-width ``addcmul_`` per
tensor, forward and backward, with no slice copies. The results are the same numbers up to
float rounding (unit tests: outputs and gradients within 1e-6 of transformers'), the
parameters and the state dict untouched.

Used where it is known to be the same computation: an RMSNorm class whose ``forward`` is
LlamaRMSNorm's own code (Llama, Mistral, Qwen2/3, their MoE variants and the others transformers
copies it into; Gemma's ``1 + weight`` and the norms that differ are left alone), and a
modeling module whose ``apply_rotary_pos_emb`` and ``rotate_half`` are Llama's. Only fp32 CPU
tensors take the fused path; anything else (bf16, CUDA, a partial rotary dimension, a cos/sin
that requires grad) runs transformers' own code. :func:`install` is called by :mod:`.engine`
for a run on the CPU not compiled with ``torch_compile`` (which fuses them itself).
"""

from __future__ import annotations

import functools
import sys
from typing import Any

ROPE = "apply_rotary_pos_emb"
"""The modeling modules' rotary embedding function, looked up by the attention's forward."""


def same_code(a: Any, b: Any) -> bool:
    """Whether functions ``a`` and ``b`` compile to the same code (a copy of the same source)."""
    ca, cb = getattr(a, "__code__", None), getattr(b, "__code__", None)
    if ca is None or cb is None:
        return False
    return bool(
        ca.co_code == cb.co_code
        and ca.co_consts == cb.co_consts
        and ca.co_names == cb.co_names
        and ca.co_varnames == cb.co_varnames
    )


@functools.cache
def rms_norm_function() -> Any:
    """The autograd function ``(x, weight, eps) -> weight * x / sqrt(mean(x**2) + eps)``."""
    import torch
    from torch.autograd.function import once_differentiable

    class RMSNorm(torch.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: Any, weight: Any, eps: float) -> Any:
            r = torch.linalg.vecdot(x, x).div_(x.shape[-1]).add_(eps).rsqrt_().unsqueeze_(-1)
            ctx.save_for_backward(x, weight, r)
            return torch.mul(x, r).mul_(weight)

        @staticmethod
        @once_differentiable
        def backward(ctx: Any, *grads: Any) -> Any:
            # y = w x r with r = (mean(x^2) + eps)^-1/2: dx = r g w - x r^3 (g w . x) / d
            (g,) = grads
            x, weight, r = ctx.saved_tensors
            d = x.shape[-1]
            dx = dw = None
            if ctx.needs_input_grad[0]:
                gw = g * weight
                c = torch.linalg.vecdot(gw, x).unsqueeze_(-1).mul_(r.pow(3)).div_(d)
                dx = gw.mul_(r).sub_(x * c)
            if ctx.needs_input_grad[1]:
                dw = (g * x).mul_(r).reshape(-1, d).sum(0)
            return dx, dw, None

    return RMSNorm


def rotate(x: Any, cos: Any, sin: Any, transpose: bool = False) -> Any:
    """``x * cos + rotate_half(x) * sin`` without building ``rotate_half(x)`` (halves ``x1, x2``:
    ``x1 c1 - x2 s1, x2 c2 + x1 s2``); ``transpose``: that map's transpose, which takes the
    gradient of the output to the input's (``g1 c1 + g2 s2, g2 c2 - g1 s1``)."""
    h = x.shape[-1] // 2
    out = x * cos
    if transpose:
        out[..., :h].addcmul_(x[..., h:], sin[..., h:])
        out[..., h:].addcmul_(x[..., :h], sin[..., :h], value=-1)
    else:
        out[..., :h].addcmul_(x[..., h:], sin[..., :h], value=-1)
        out[..., h:].addcmul_(x[..., :h], sin[..., h:])
    return out


@functools.cache
def rope_function() -> Any:
    """The autograd function ``(q, k, cos, sin) -> (q', k')`` of Llama's rotary embedding, cos and
    sin already broadcastable to q and k."""
    import torch
    from torch.autograd.function import once_differentiable

    class Rope(torch.autograd.Function):
        @staticmethod
        def forward(ctx: Any, q: Any, k: Any, cos: Any, sin: Any) -> Any:
            ctx.save_for_backward(cos, sin)
            return rotate(q, cos, sin), rotate(k, cos, sin)

        @staticmethod
        @once_differentiable
        def backward(ctx: Any, *grads: Any) -> Any:
            gq, gk = grads
            cos, sin = ctx.saved_tensors
            dq = rotate(gq, cos, sin, True) if gq is not None and ctx.needs_input_grad[0] else None
            dk = rotate(gk, cos, sin, True) if gk is not None and ctx.needs_input_grad[1] else None
            return dq, dk, None, None

    return Rope


def cpu_fp32(*tensors: Any) -> bool:
    """Whether every tensor is a float32 tensor on the CPU."""
    import torch

    return all(t.device.type == "cpu" and t.dtype == torch.float32 for t in tensors)


@functools.cache
def norm_class(base: type) -> type:
    """``base`` (an RMSNorm with LlamaRMSNorm's forward) with the fused forward on fp32 CPU input."""

    def forward(self: Any, hidden_states: Any) -> Any:
        if not cpu_fp32(hidden_states, self.weight):
            return base.forward(self, hidden_states)  # type: ignore[attr-defined]
        return rms_norm_function().apply(hidden_states, self.weight, self.variance_epsilon)

    return type(base.__name__, (base,), {"forward": forward, "__module__": base.__module__})


def fused_rope(original: Any) -> Any:
    """A drop-in ``apply_rotary_pos_emb`` for a module whose own is ``original`` (Llama's)."""

    def apply_rotary_pos_emb(q: Any, k: Any, cos: Any, sin: Any, unsqueeze_dim: int = 1) -> Any:
        if (
            not cpu_fp32(q, k, cos, sin)
            or cos.requires_grad
            or sin.requires_grad
            or cos.shape[-1] != q.shape[-1]
            or q.shape[-1] % 2
        ):
            return original(q, k, cos, sin, unsqueeze_dim)
        cos, sin = cos.unsqueeze(unsqueeze_dim), sin.unsqueeze(unsqueeze_dim)
        return rope_function().apply(q, k, cos, sin)

    apply_rotary_pos_emb.original = original  # type: ignore[attr-defined]
    return apply_rotary_pos_emb


def install(model: Any) -> tuple[int, int]:
    """Fuse the RMSNorm modules of ``model`` and the rotary embedding of its modeling modules,
    where they are Llama's computation; (norms swapped, modules patched).

    A norm's class becomes a subclass of its own with the fused forward (its parameters and
    state dict stay); the modeling module's ``apply_rotary_pos_emb`` is replaced for the
    process, by a function that runs the original for anything but fp32 CPU tensors.
    """
    from transformers.models.llama import modeling_llama

    reference = modeling_llama.LlamaRMSNorm.forward
    llama_rope = getattr(modeling_llama, ROPE, None)
    llama_rope = getattr(llama_rope, "original", llama_rope)  # Llama's own, patched or not
    norms = 0
    modules: set[str] = set()
    for module in model.modules():
        cls: type = type(module)
        modules.add(cls.__module__)
        if cls.__name__.endswith("RMSNorm") and same_code(getattr(cls, "forward", None), reference):
            module.__class__ = norm_class(cls)
            norms += 1
    patched = 0
    for name in sorted(modules):
        mod = sys.modules.get(name)
        rope = getattr(mod, ROPE, None)
        if rope is None or hasattr(rope, "original"):
            continue
        if same_code(rope, llama_rope) and same_code(
            getattr(mod, "rotate_half", None), modeling_llama.rotate_half
        ):
            setattr(mod, ROPE, fused_rope(rope))
            patched += 1
    return norms, patched
