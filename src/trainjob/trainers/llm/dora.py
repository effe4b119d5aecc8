"""DoRA's training forward without peft's second pass of the frozen weight.

peft's DoRA linear layer (``peft.tuners.lora.variants.DoraLinearVariant``), in training with
``lora_dropout > 0``, runs the frozen base linear twice: once on the input (the layer's output)
and once more on the dropped-out input, for the magnitude's correction term
``(m / ||W + s BA|| - 1) * W dropout(x)``; the backward pass then multiplies by ``W`` twice as
well. On q_proj and v_proj of a Llama that is about 14% of a CPU step of a DoRA fine-tune
(benchmarks/finetune.py). torchtune's ``DoRALinear`` scales the base output it already has:

    y = m / ||W + s BA||_c * (W x + s B A dropout(x))      (+ bias, unscaled)

which is the DoRA weight ``m (W + s BA) / ||W + s BA||_c`` applied to ``x``, with dropout on the
low-rank path's input only, as in LoRA. The column norm is detached (the paper's section 4.3,
as in peft and torchtune); with no dropout, or in eval mode, this is exactly peft's forward
(which then reuses the base output too). :func:`install` puts this forward on every DoRA linear
layer of a peft model for training: the parameters, their names, the saved adapter and the
merged weights are peft's own (only the variant object that computes the forward changes), so
the adapter loads with plain peft and merges to the same model.
"""

from __future__ import annotations

from typing import Any


def fast_variant_class() -> Any:
    """peft's ``DoraLinearVariant`` with :func:`forward` as its forward (merge, unmerge and init
    stay peft's)."""
    from peft.tuners.lora.variants import DoraLinearVariant

    class FastDoraLinearVariant(DoraLinearVariant):
        """peft's DoRA linear variant whose training forward skips the base weight's second pass."""

        @staticmethod
        def forward(module: Any, active_adapter: str, x: Any, result: Any, **kwargs: Any) -> Any:
            if not module.training or len(module.active_adapters) != 1:
                return DoraLinearVariant.forward(
                    module, active_adapter=active_adapter, x=x, result=result, **kwargs
                )
            return forward(module, active_adapter, x, result)

    return FastDoraLinearVariant


def forward(module: Any, adapter: str, x: Any, result: Any) -> Any:
    """The DoRA layer's output: ``result`` (the base layer's ``W x + bias``) with the magnitude
    applied and the low-rank update added on the dropped-out input."""
    import torch
    from peft.utils.integrations import dequantize_module_weight
    from peft.utils.other import transpose

    lora_a = module.lora_A[adapter]
    lora_b = module.lora_B[adapter]
    scaling = module.scaling[adapter]
    base = module.get_base_layer()
    dora = module.lora_magnitude_vector[adapter]
    with torch.no_grad():  # the norm is a constant (detached), as in peft and torchtune
        # through the modules, as peft does (FSDP's hooks are on __call__): B A, (out, in)
        eye = torch.eye(lora_a.weight.shape[1], device=lora_a.weight.device, dtype=x.dtype)
        lora_weight = lora_b(lora_a(eye)).T
        weight = transpose(dequantize_module_weight(base).to(x.dtype), dora.fan_in_fan_out)
        norm = torch.linalg.norm(weight + scaling * lora_weight, dim=1).to(weight.dtype)
    scale = dora.weight / norm
    lora_out = lora_b(lora_a(module.lora_dropout[adapter](x)))
    bias = base.bias
    if bias is None:
        return (result + scaling * lora_out) * scale
    return (result - bias + scaling * lora_out) * scale + bias


def install(model: Any) -> int:
    """Give every DoRA linear layer of ``model`` (a peft model; anything else is left alone) the
    faster training forward; the number of layers changed."""
    try:
        from peft.tuners.lora.variants import DoraLinearVariant
    except ImportError:
        return 0
    fast = fast_variant_class()
    changed = 0
    for module in model.modules():
        variants = getattr(module, "lora_variant", None)
        if not isinstance(variants, dict):
            continue
        for name, variant in list(variants.items()):
            if type(variant) is DoraLinearVariant:
                variants[name] = fast()
                changed += 1
    return changed
