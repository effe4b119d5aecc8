"""LoRA's dropout on the CPU with a cheaper mask than torch's, at the same rate.

peft's LoRA layers (and DoRA's, and QLoRA's) drop out the input of the low-rank path with
``nn.Dropout``: on the CPU torch draws that mask with ``bernoulli_``, slower on one thread than
the frozen q_proj's matmul on the same input (1.3 against 1.1 ms for a 256 x 512 input, hot
caches), paid on every q_proj and v_proj input of every layer: 5.7% of a LoRA step of
``benchmarks/finetune.py`` (py-spy). :class:`CpuDropout` draws one 31-bit integer an element from
the same generator (torch's default CPU generator: seeded by ``set_seed``, saved and restored
with a checkpoint's RNG state, so a resumed run draws what the uninterrupted one would), keeps
an element when it is at least ``round(p * 2**31)`` (a drop rate within 2.4e-10 of ``p``) and
scales it by ``1 / (1 - p)`` as ``nn.Dropout`` does; the mask is kept as one byte an element for
the backward pass, as torch's own is. Measured on one thread, that input: with hot caches the
forward takes 0.56x torch's time, forward and backward 0.63x; inside the benchmark's training
process (LoRA and QLoRA, 10 steps) a forward call took 1.01-1.03 ms against torch's 1.11-1.26 ms,
where every pass over the input and the output comes from memory. The masks are other draws
than torch's, so from the second step (peft starts ``lora_B`` at zero) a run's losses differ
from peft's by what another seed would change; the expected output, the rate and the scaling
are torch's.

On other devices (CUDA's dropout is one fused kernel already), in eval mode, in place, and for
``p`` of 0 or 1 the module is ``nn.Dropout`` itself. :func:`install` swaps it in for the dropout
modules of a peft model's LoRA layers only: no parameter or buffer changes, so the saved adapter
and the merged model are peft's.
"""

from __future__ import annotations

import functools
from typing import Any

RANGE = 1 << 31
"""``random_()`` on int32 draws uniformly from [0, 2**31)."""


@functools.cache
def mask_function() -> Any:
    """The autograd function ``(x, p) -> x * keep / (1 - p)`` with ``keep`` drawn here."""
    import torch

    class DropoutMask(torch.autograd.Function):
        """Dropout of a CPU tensor; its backward scales the gradient by the same mask."""

        @staticmethod
        def forward(ctx: Any, x: Any, p: float) -> Any:
            threshold = round(p * RANGE)
            draws = torch.empty(x.shape, dtype=torch.int32).random_()
            # draws >= threshold as 1 and 0, in integer ops (comparisons to bool and bool
            # multiplications are several times slower on the CPU): draws - threshold is
            # negative exactly when the element drops, and its sign bit shifted down is -1
            keep = draws.sub_(threshold).bitwise_right_shift_(31).add_(1).to(torch.uint8)
            scale = 1.0 / (1.0 - p)
            ctx.save_for_backward(keep)
            ctx.scale = scale
            return torch.mul(x, keep).mul_(scale)

        @staticmethod
        def backward(ctx: Any, *grads: Any) -> Any:
            (keep,) = ctx.saved_tensors
            return torch.mul(grads[0], keep).mul_(ctx.scale), None

    return DropoutMask


def dropout(x: Any, p: float) -> Any:
    """``x`` dropped out with probability ``p`` (0 < p < 1), on the CPU."""
    return mask_function().apply(x, p)


@functools.cache
def module_class() -> Any:
    """:class:`CpuDropout`, made on first use (torch is imported only by the processes that train)."""
    import torch

    class CpuDropout(torch.nn.Dropout):
        """``nn.Dropout`` whose training forward on a CPU tensor draws its mask with :func:`dropout`."""

        def forward(self, input: Any) -> Any:
            if (
                not self.training
                or not 0.0 < self.p < 1.0
                or input.device.type != "cpu"
                or not input.is_floating_point()
                or self.inplace
            ):
                return super().forward(input)
            return dropout(input, self.p)

    return CpuDropout


def install(model: Any) -> int:
    """Swap :class:`CpuDropout` in for the ``nn.Dropout`` of every LoRA layer of ``model`` (a
    peft model; anything else is left alone); the number of modules swapped."""
    import torch

    cls = module_class()
    changed = 0
    for module in model.modules():
        dropouts = getattr(module, "lora_dropout", None)
        if not isinstance(dropouts, torch.nn.ModuleDict):
            continue
        for name, old in list(dropouts.items()):
            if type(old) is torch.nn.Dropout:
                new = cls(p=old.p, inplace=old.inplace)
                new.train(old.training)
                dropouts[name] = new
                changed += 1
    return changed
