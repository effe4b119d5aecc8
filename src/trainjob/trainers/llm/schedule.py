"""The learning-rate schedule: constant, or torchtune's cosine with linear warmup.

torchtune's LoRA configs set ``lr_scheduler: {_component_:
torchtune.training.lr_schedulers.get_cosine_schedule_with_warmup, num_warmup_steps: 100}``; the
same ``lr_scheduler.*`` overrides select it here, with torchtune's formula, so a command written
for ``tune run`` trains with the same learning rates. Without them the rate stays at
``optimizer.lr`` (trainjob's default: a 100-step warmup would leave the few steps of a small run
at a fraction of the rate). Pure: :mod:`.train` wraps :func:`factor` in a ``LambdaLR``.
"""

from __future__ import annotations

import math

COSINE = "torchtune.training.lr_schedulers.get_cosine_schedule_with_warmup"
"""The scheduler accepted, by torchtune's current name."""

ALIASES = (
    COSINE,
    "torchtune.training.get_cosine_schedule_with_warmup",
    "torchtune.modules.get_cosine_schedule_with_warmup",
)
"""Names older torchtune releases and configs use for the same scheduler."""


def factor(step: int, warmup_steps: int, total_steps: int, num_cycles: float) -> float:
    """The multiple of ``optimizer.lr`` for optimizer step ``step`` (0-based), as torchtune's.

    Linear from 0 to 1 over ``warmup_steps``, then cosine over the remaining steps:
    ``0.5 * (1 + cos(pi * num_cycles * 2 * progress))``, floored at 0 (``num_cycles=0.5``: one
    half-wave from 1 down to 0 at the last step).
    """
    if step < warmup_steps:
        return step / max(1, warmup_steps)
    progress = (step - warmup_steps) / max(1, total_steps - warmup_steps)
    return max(0.0, 0.5 * (1.0 + math.cos(math.pi * num_cycles * 2.0 * progress)))
