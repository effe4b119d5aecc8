"""What one rank of a ``trl`` run does: ``python -m trainjob.trainers.llm.trl.train METHOD ...``.

Started by torchrun (RANK/WORLD_SIZE/LOCAL_RANK in the env, DDP over gloo on CPU or nccl on
GPU through transformers and accelerate) or called in-process by :mod:`.launch` for one
process. It does what TRL's ``trl/scripts/sft.py`` and ``dpo.py`` do (TRL loads the model from
``--model_name_or_path`` with the script's model arguments, applies ``--use_peft``, builds the
trainer from the parsed config), and adds: the seed set before the model and adapter are built,
the step lines of :mod:`..engine` (with DPO's reward margin, GRPO's mean reward), tokens/s, checkpoints marked
complete once every rank wrote them and, unless ``--resume_from_checkpoint`` says otherwise,
resumed from the newest complete one in ``output_dir``.
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from trainjob.trainers import gloo_exit, reporting
from trainjob.trainers.llm import checkpoint, engine
from trainjob.trainers.llm import model as llm_model
from trainjob.trainers.llm.errors import TrainerError
from trainjob.trainers.llm.trl import data, methods, rewards

log = engine.log

NO_RESUME = ("false", "no", "none", "0")
"""``--resume_from_checkpoint`` values that turn the automatic resume off."""


def trainer_base(method: str) -> Any:
    """TRL's trainer class for ``method``."""
    import trl

    return {"sft": trl.SFTTrainer, "dpo": trl.DPOTrainer, "grpo": trl.GRPOTrainer}[method]  # type: ignore[attr-defined]


def resume_point(p: methods.Parsed, rank: int) -> str | None:
    """The checkpoint to resume from: the one given, or the newest complete one in output_dir
    (newer ones cut short are removed by rank 0); None to start afresh."""
    given = p.training.resume_from_checkpoint
    if isinstance(given, str) and given.strip().lower() in NO_RESUME:
        return None
    if given:
        return str(given)
    newest, incomplete = checkpoint.newest_complete_in(p.training.output_dir)
    if rank == 0:
        for path in incomplete:
            log(f"checkpoint {path} was cut short (not marked complete): removing it")
            shutil.rmtree(path, ignore_errors=True)
    return newest


def model_init_kwargs(p: methods.Parsed) -> dict[str, Any]:
    """What TRL's scripts pass to ``from_pretrained`` (revision, dtype, attention, remote code)."""
    kwargs: dict[str, Any] = {
        "revision": p.model.model_revision,
        "trust_remote_code": p.training.trust_remote_code,
        "attn_implementation": p.model.attn_implementation,
        "dtype": p.model.dtype,
    }
    if p.training.model_init_kwargs is not None:
        kwargs.update(p.training.model_init_kwargs)
    return kwargs


def train(p: methods.Parsed) -> None:
    """Run the whole ``trl`` job described by ``p`` in this process (one rank of it)."""
    import warnings

    import transformers
    import trl

    started = time.monotonic()
    rank = int(os.environ.get("RANK", "0"))
    world = int(os.environ.get("WORLD_SIZE", "1"))
    args = p.training
    device = "cpu" if args.use_cpu else "cuda"
    dtype = "bf16" if args.bf16 else str(p.model.dtype or "auto")
    log(f"trl {p.method}: {world} process(es), device {device}, dtype {dtype}", rank)
    loaded = data.load(p.script)
    train_split = loaded[p.script.dataset_train_split]
    data.check_columns(p.method, p.script, args, train_split)
    evaluating = args.eval_strategy != "no"
    eval_split = loaded.get(p.script.dataset_test_split) if evaluating else None
    if evaluating and eval_split is None:
        raise TrainerError(
            f"--eval_strategy={args.eval_strategy} but --dataset_name={p.script.dataset_name} "
            f"has no split {p.script.dataset_test_split!r}; set --dataset_test_split or "
            "--eval_strategy no"
        )
    log(
        f"dataset: {len(train_split)} rows (split {p.script.dataset_train_split})"
        + (f", eval {len(eval_split)} rows" if eval_split is not None else ""),
        rank,
    )
    warnings.filterwarnings("ignore", module=r"(trl|transformers|peft|accelerate)(\.|$)")
    transformers.utils.logging.set_verbosity_error()  # type: ignore[no-untyped-call]
    transformers.utils.logging.disable_progress_bar()  # type: ignore[no-untyped-call]
    args.model_init_kwargs = model_init_kwargs(p)
    # the adapter's initial weights come from torch's RNG: seed before the trainer builds it
    transformers.set_seed(args.seed)
    base = trainer_base(p.method)
    extra: dict[str, Any] = {}
    if p.method == "grpo":
        funcs: list[Any] = list(rewards.resolve(p.script.reward_funcs))
        if p.script.reward_model_name_or_path:
            funcs.insert(0, p.script.reward_model_name_or_path)
        extra["reward_funcs"] = funcs
        log(
            f"rewards: {', '.join([*(['model ' + str(p.script.reward_model_name_or_path)] if p.script.reward_model_name_or_path else []), *(p.script.reward_funcs or [])])}; "
            f"{args.num_generations} completions per prompt, up to {args.max_completion_length} tokens",
            rank,
        )
    try:
        trainer = engine.make_trainer_class(base, torchtune=False)(
            model=p.model.model_name_or_path,
            args=args,
            train_dataset=train_split,
            eval_dataset=eval_split,
            quantization_config=trl.get_quantization_config(p.model),  # type: ignore[attr-defined]
            peft_config=trl.get_peft_config(p.model),  # type: ignore[attr-defined]
            **extra,
        )
    except OSError as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise TrainerError(
            f"cannot load --model_name_or_path={p.model.model_name_or_path}: {first}"
        ) from None
    llm_model.keep_adapter_dtype(trainer.model)  # QLoRA in fp32: TRL made the adapter bf16
    accum = args.gradient_accumulation_steps
    batches = len(trainer.get_train_dataloader())
    steps = engine.steps_per_epoch(
        batches, len(trainer.train_dataset), args.per_device_train_batch_size, accum, world
    )
    epochs = max(1, int(-(-args.num_train_epochs // 1)))
    if args.max_steps > 0:
        epochs = -(-args.max_steps // steps)
    run = engine.Run(
        rank=rank,
        epochs=epochs,
        output_dir=args.output_dir,
        steps_per_epoch=steps,
        epoch_steps=steps,
        tokenizer=trainer.processing_class,
        trainer=trainer,
        token_metrics=p.token_metrics,
    )
    trainer.run = run
    trainer.remove_callback(transformers.PrinterCallback)
    trainer.add_callback(engine.make_callback(run))
    reporting.install(trainer)  # progress (KEP-2779): the first loss and the last report sent
    net = trainer.model
    total = sum(x.numel() for x in net.parameters())
    trainable = sum(x.numel() for x in net.parameters() if x.requires_grad)
    log(
        f"model: {p.model.model_name_or_path}, {total} parameters, {trainable} trainable"
        + (f" (LoRA rank {p.model.lora_r})" if p.model.use_peft else ""),
        rank,
    )
    length = f"{epochs} epoch(s) of {steps} step(s)"
    if args.max_steps > 0:
        length = f"{args.max_steps} step(s) (--max_steps; an epoch is {steps})"
    log(
        f"training: {length}, batch "
        f"{args.per_device_train_batch_size} x {accum} accumulation x {world} process(es), "
        f"lr {args.learning_rate:g} ({getattr(args.lr_scheduler_type, 'value', args.lr_scheduler_type)})",
        rank,
    )
    resume = resume_point(p, rank)
    if resume is not None:
        step = resume.rstrip("/").rsplit("-", 1)[-1]
        log(f"resumed from checkpoint at step {step} ({resume})", rank)
    trainer.train(resume_from_checkpoint=resume)
    trainer.save_model(args.output_dir)
    if rank == 0:
        out = Path(args.output_dir)
        files = sorted(x.name for x in out.iterdir() if x.is_file())
        what = "LoRA adapter (peft)" if p.model.use_peft else "full model (safetensors)"
        log(
            f"saved {what} to {out}: {', '.join(files)} "
            f"({time.monotonic() - started:.1f}s, {trainer.state.global_step} steps)"
        )


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of a training process: ``METHOD --flag value ...``; exit code."""
    llm_model.quiet_bitsandbytes()
    import torch

    args = list(sys.argv[1:] if argv is None else argv)
    try:
        parsed = methods.parse(args, torch.cuda.is_available())
        gloo_exit.register()  # a finished DDP run exits 0, not torch 2.15's abort at exit
        try:
            train(parsed)
        finally:
            if torch.distributed.is_available() and torch.distributed.is_initialized():
                torch.distributed.destroy_process_group()
    except TrainerError as exc:
        print(f"error: {exc}", file=sys.stderr, flush=True)
        return 1
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
