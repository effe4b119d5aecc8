"""The learning-rate schedule: torchtune's cosine with warmup, selected by its overrides only."""

from __future__ import annotations

import itertools
import math

import pytest

from trainjob.trainers.llm import config, schedule
from trainjob.trainers.llm.errors import TrainerError

REQUIRED = ("output_dir=/out", "checkpointer.checkpoint_dir=/model", "dataset.data_dir=/data")
LORA = ("lora_finetune_single_device", "llama3_2/1B_lora_single_device")


def build(*overrides: str) -> config.TrainConfig:
    return config.build(*LORA, [*REQUIRED, *overrides])


def torchtune_reference(step: int, warmup: int, total: int, cycles: float) -> float:
    """torchtune.training.lr_schedulers.get_cosine_schedule_with_warmup's lr_lambda, as written."""
    if step < warmup:
        return step / max(1, warmup)
    progress = (step - warmup) / max(1, total - warmup)
    cosine_lr_multiple = 0.5 * (1.0 + math.cos(math.pi * cycles * 2.0 * progress))
    return max(0.0, cosine_lr_multiple)


def test_warmup_rises_linearly_then_a_half_cosine_falls_to_zero() -> None:
    values = [schedule.factor(s, 4, 12, 0.5) for s in range(13)]
    assert values[:5] == [0.0, 0.25, 0.5, 0.75, 1.0]
    assert all(a > b for a, b in itertools.pairwise(values[4:]))
    assert values[8] == pytest.approx(0.5)
    assert values[12] == pytest.approx(0.0, abs=1e-12)


@pytest.mark.parametrize(
    ("warmup", "total", "cycles"), [(0, 10, 0.5), (100, 30, 0.5), (3, 20, 1.0), (5, 5, 0.5)]
)
def test_factor_matches_torchtune_on_every_step(warmup: int, total: int, cycles: float) -> None:
    for step in range(total + 2):
        assert schedule.factor(step, warmup, total, cycles) == pytest.approx(
            torchtune_reference(step, warmup, total, cycles)
        )


def test_the_rate_follows_the_config_file_torchtune_s_lora_warms_up_its_full_does_not() -> None:
    lora = build()
    assert (lora.lr_scheduler, lora.warmup_steps) == (schedule.COSINE, 100)
    assert build("lr_scheduler=null").lr_scheduler is None
    full = config.build("full_finetune_distributed", "llama3_2/1B_full", REQUIRED)
    assert full.lr_scheduler is None


@pytest.mark.parametrize("name", schedule.ALIASES)
def test_torchtune_s_scheduler_names_select_cosine(name: str) -> None:
    cfg = build(f"lr_scheduler._component_={name}", "lr_scheduler.num_warmup_steps=10")
    assert (cfg.lr_scheduler, cfg.warmup_steps, cfg.num_cycles) == (schedule.COSINE, 10, 0.5)


def test_warmup_alone_extends_the_config_with_the_cosine_scheduler() -> None:
    cfg = build("lr_scheduler.num_warmup_steps=3", "lr_scheduler.num_cycles=1")
    assert (cfg.lr_scheduler, cfg.warmup_steps, cfg.num_cycles) == (schedule.COSINE, 3, 1.0)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (
            ("lr_scheduler._component_=torch.optim.lr_scheduler.StepLR",),
            'override lr_scheduler._component_="torch.optim.lr_scheduler.StepLR" must be '
            f"{schedule.COSINE} (cosine with warmup, the one scheduler supported) or null",
        ),
        (
            ("lr_scheduler.num_warmup_steps=-1",),
            'override lr_scheduler.num_warmup_steps="-1" must be an integer >= 0',
        ),
        (
            ("lr_scheduler.num_cycles=0",),
            'override lr_scheduler.num_cycles="0" must be a number > 0',
        ),
        (
            ("lr_scheduler=null", "lr_scheduler.num_warmup_steps=5"),
            "lr_scheduler=null turns the scheduler off, but lr_scheduler.num_warmup_steps is "
            "set; drop one of them",
        ),
    ],
)
def test_bad_scheduler_overrides_are_one_line_errors(
    overrides: tuple[str, ...], message: str
) -> None:
    with pytest.raises(TrainerError) as err:
        build(*overrides)
    assert str(err.value) == message
