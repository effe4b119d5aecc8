"""trainjob's ``trl sft`` on the CPU: the loss from the model's own logits, and SFTTrainer's
entropy and token accuracy only on the steps that log them (engine.plain_sft_loss), equal to
what TRL's fused LM head computes for the same batch."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from tests.unit.trainers import tiny
from trainjob.trainers.llm import engine

pytest.importorskip("trl")


def trainer(cls: Any, model_dir: Path, out: Path, rows: list[list[int]]) -> Any:
    import datasets  # type: ignore[import-untyped]
    import transformers

    transformers.set_seed(0)
    args = tiny.sft_args(out)
    data = datasets.Dataset.from_list([{"input_ids": r} for r in rows])
    return cls(model=str(model_dir), args=args, train_dataset=data)


def batch(t: Any) -> dict[str, Any]:
    return dict(t._prepare_inputs(next(iter(t.get_train_dataloader()))))


def test_the_loss_and_metrics_equal_trls_fused_head_on_logging_steps_only(
    model_dir: Path, tmp_path: Path
) -> None:
    from trl import SFTTrainer  # type: ignore[attr-defined]

    # rows of different lengths: padding, whose labels are -100, is left out of all three
    rows = [[5, 6, 7, 8, 9, 10, 11, 5], [7, 8, 9, 6, 5]] * 2
    ours = trainer(engine.make_trainer_class(torchtune=False), model_dir, tmp_path / "a", rows)
    ours.run = engine.Run(
        rank=0, epochs=1, output_dir=str(tmp_path), steps_per_epoch=2, epoch_steps=2, tokenizer=None
    )
    theirs = trainer(SFTTrainer, model_dir, tmp_path / "b", rows)
    inputs = batch(ours)
    assert (inputs["labels"] == -100).any()
    ours.model.train()
    theirs.model.train()
    ours.state.logging_steps, ours.state.max_steps, ours.state.global_step = 10, 100, 0
    ours.args.logging_first_step = True
    assert engine.plain_sft_loss(ours, inputs)
    loss = ours.compute_loss(ours.model, dict(inputs))
    want = theirs.compute_loss(theirs.model, dict(inputs))
    assert float(loss.detach()) == pytest.approx(float(want.detach()), abs=1e-5)
    got_m, want_m = ours._metrics["train"], theirs._metrics["train"]
    for key in ("entropy", "mean_token_accuracy"):
        assert len(got_m[key]) == 1, key
        assert got_m[key] == pytest.approx(want_m[key], abs=1e-5), key
    assert ours.run.plain_loss

    # a step that does not log computes neither metric; the next logging step does
    ours._metrics["train"].clear()
    ours.state.logging_steps, ours.state.max_steps, ours.state.global_step = 10, 100, 3
    ours.compute_loss(ours.model, dict(inputs))
    assert "entropy" not in ours._metrics["train"]
    ours.state.global_step = 9  # the step in progress is the 10th: it logs
    ours.compute_loss(ours.model, dict(inputs))
    assert len(ours._metrics["train"]["entropy"]) == 1

    # --token_metrics False: a logging step computes neither, and the loss is the same
    ours._metrics["train"].clear()
    ours.run.token_metrics = False
    again = ours.compute_loss(ours.model, dict(inputs))
    assert float(again.detach()) == pytest.approx(float(loss.detach()), abs=1e-6)
    assert "entropy" not in ours._metrics["train"]
    assert "mean_token_accuracy" not in ours._metrics["train"]


@pytest.mark.parametrize(
    ("strategy", "every", "first", "step", "want"),
    [
        ("steps", 10, False, 9, True),
        ("steps", 10, False, 10, False),
        ("steps", 10, True, 0, True),
        ("steps", 10, False, 0, False),
        ("steps", 10, False, 99, True),  # the last step
        ("epoch", 10, False, 3, True),
        ("no", 10, False, 9, False),
    ],
)
def test_logs_next_step_follows_transformers_rule(
    strategy: str, every: int, first: bool, step: int, want: bool
) -> None:
    args = SimpleNamespace(logging_strategy=strategy, logging_first_step=first)
    state = SimpleNamespace(global_step=step, logging_steps=every, max_steps=100)
    assert engine.logs_next_step(args, state) is want


def test_floating_point_ops_are_transformers_count_with_the_parameters_counted_once(
    model_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import transformers

    ours = trainer(engine.make_trainer_class(torchtune=False), model_dir, tmp_path, [[5, 6, 7]] * 2)
    inputs = batch(ours)
    want = transformers.Trainer.floating_point_ops(ours, inputs)
    assert want > 0
    counted: list[dict[str, Any]] = []
    count = ours.model.num_parameters

    def num_parameters(**kw: Any) -> int:
        counted.append(kw)
        return int(count(**kw))

    monkeypatch.setattr(ours.model, "num_parameters", num_parameters)
    assert [ours.floating_point_ops(inputs) for _ in range(3)] == [want] * 3
    assert counted == [{"exclude_embeddings": True}]
    assert ours.floating_point_ops({"labels": inputs["labels"]}) == 0  # no input_ids: none
