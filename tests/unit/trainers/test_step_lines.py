"""Where a step is in the run (the step lines, the per-epoch copies): epochs cut short by
torchtune's ``max_steps_per_epoch`` and runs cut short by TRL's ``--max_steps``."""

from __future__ import annotations

from trainjob.trainers.llm import engine


def run(steps_per_epoch: int, epoch_steps: int, epochs: int = 3) -> engine.Run:
    return engine.Run(
        rank=0,
        epochs=epochs,
        output_dir="/o",
        steps_per_epoch=steps_per_epoch,
        epoch_steps=epoch_steps,
        tokenizer=None,
    )


def test_an_epoch_cut_short_ends_and_the_next_step_is_the_next_epochs_first() -> None:
    """transformers ends its epoch loop at ``max_steps_per_epoch``; global step 3 of 2-step
    epochs is epoch 2's first (it was "epoch 1 step 3/2", and epoch 1's copy was overwritten)."""
    r = run(steps_per_epoch=32, epoch_steps=2)
    got = [r.position(s) for s in range(1, 7)]
    assert got == [(1, 1), (1, 2), (2, 1), (2, 2), (3, 1), (3, 2)]


def test_full_epochs_count_as_transformers_does() -> None:
    r = run(steps_per_epoch=4, epoch_steps=4)
    assert [r.position(s) for s in (1, 4, 5, 8, 9)] == [(1, 1), (1, 4), (2, 1), (2, 4), (3, 1)]


def test_a_run_stopped_by_max_steps_shows_the_steps_its_last_epoch_runs() -> None:
    r = run(steps_per_epoch=20, epoch_steps=20)
    assert r.steps_in(1, 2) == 2  # --max_steps=2: "step 2/2", not "2/20"
    assert (r.steps_in(1, 25), r.steps_in(2, 25)) == (20, 5)
    assert r.steps_in(1, 60) == 20  # transformers' own max_steps: whole epochs
