"""The training loop one process runs: ``python -m trainjob.trainers.llm.train RECIPE --config ...``.

Started by torchrun for the distributed recipes (one process per device, RANK/WORLD_SIZE/
LOCAL_RANK in the env) or called in-process by :mod:`.launch` for single-device ones. It loads the
tokenizer, data (:mod:`.data`) and model (:mod:`.model`), resumes from the newest complete
checkpoint in ``output_dir`` if there is one, trains with TRL/transformers (:mod:`.engine`: DDP,
nccl on GPUs, gloo on CPUs) and saves the model or adapter, plus the merged model of a LoRA run
(:mod:`.checkpoint`), then exports it when ``export.uri`` is set (:mod:`.export`).
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from trainjob.trainers import gloo_exit, reporting
from trainjob.trainers.llm import argv as argv_mod
from trainjob.trainers.llm import checkpoint, data, engine, model
from trainjob.trainers.llm import config as config_mod
from trainjob.trainers.llm.errors import TrainerError
from trainjob.trainers.llm.recipes import Method

INTERRUPTED = "error: training interrupted (Ctrl-C); nothing was saved to output_dir"
INTERRUPTED_EXIT = 130
"""Exit code after Ctrl-C, as a shell gives (128 + SIGINT)."""


log = engine.log
format_step = engine.format_step
format_epoch = engine.format_epoch


def train(cfg: config_mod.TrainConfig) -> None:
    """Run the whole fine-tune described by ``cfg`` in this process (one rank of the job)."""
    model.quiet_bitsandbytes()
    import torch

    distributed = "WORLD_SIZE" in os.environ and "RANK" in os.environ
    rank = int(os.environ.get("RANK", "0")) if distributed else 0
    world = int(os.environ.get("WORLD_SIZE", "1")) if distributed else 1
    local_rank = int(os.environ.get("LOCAL_RANK", "0")) if distributed else 0
    cuda = torch.cuda.is_available() and cfg.device != "cpu"
    if cfg.device == "cuda" and not torch.cuda.is_available():
        raise TrainerError("device=cuda but this machine has no CUDA GPU; use device=cpu")
    model.check_checkpoint_dir(cfg)
    dtype = model.resolve_dtype(cfg, cuda)
    model.check_qlora(cfg.lora, cuda)
    if cuda:
        torch.cuda.set_device(local_rank)
        device = torch.device("cuda", local_rank)
    else:
        device = torch.device("cpu")
    try:
        _train(cfg, rank, world, device, dtype)
    finally:
        import torch.distributed as dist

        if distributed and dist.is_initialized():
            dist.destroy_process_group()


def val_dataset(cfg: config_mod.TrainConfig) -> config_mod.DatasetConfig | None:
    """``dataset`` read with ``dataset_val``'s split (and files, when it names its own)."""
    val = cfg.dataset_val
    if val is None:
        return None
    own = bool(val.data_dir or val.data_files)
    return dataclasses.replace(
        cfg.dataset,
        split=val.split or "validation",
        data_dir=val.data_dir if own else cfg.dataset.data_dir,
        data_files=val.data_files if own else cfg.dataset.data_files,
    )


def _train(cfg: config_mod.TrainConfig, rank: int, world: int, device: Any, dtype: str) -> None:
    import warnings

    started = time.monotonic()
    rec = cfg.recipe
    log(
        f"recipe {rec.recipe} --config {rec.config}: {rec.method} fine-tune, "
        f"{world} process(es), device {device.type}, dtype {dtype}",
        rank,
    )
    tok_dir, note = model.tokenizer_dir(cfg)
    if note:
        log(note, rank)
    tokenizer = model.load_tokenizer(tok_dir)
    examples, dropped = data.tokenize_rows(
        data.load_rows(cfg.dataset), cfg.dataset, tokenizer, cfg.max_seq_len
    )
    log(
        f"dataset: {len(examples)} examples"
        + (f" ({dropped} dropped: nothing left after truncation)" if dropped else ""),
        rank,
    )
    eval_examples = None
    val_ds = val_dataset(cfg)
    if val_ds is not None:
        eval_examples, _ = data.tokenize_rows(
            data.load_rows(val_ds), val_ds, tokenizer, cfg.max_seq_len
        )
        log(f"eval dataset: {len(eval_examples)} examples (split {val_ds.split})", rank)
    engine.seed_everything(cfg)
    net = model.load_model(cfg, dtype, device)
    if rec.method is Method.LORA:
        net = model.apply_lora(net, cfg.lora, cfg.activation_checkpointing)
        kind = "DoRA" if cfg.lora.use_dora else ("QLoRA" if cfg.lora.quantize_base else "LoRA")
        log(f"{kind}: rank {cfg.lora.lora_rank} on {', '.join(model.lora_targets(cfg.lora))}", rank)
    if cfg.lr_scheduler is not None:
        schedule_line = f"cosine, {cfg.warmup_steps} warmup step(s) of {{total}}, peak {cfg.lr:g}"
    else:
        schedule_line = (
            f"constant {cfg.lr:g} (lr_scheduler.num_warmup_steps=N: torchtune's cosine with warmup)"
        )

    # TRL and transformers say what they defaulted; the lines above say what this run does
    warnings.filterwarnings("ignore", module=r"(trl|transformers|peft|accelerate)(\.|$)")
    import transformers

    transformers.utils.logging.set_verbosity_error()  # type: ignore[no-untyped-call]
    args = engine.training_arguments(cfg, device.type == "cuda", world)
    trainer_class = engine.make_trainer_class()
    with engine.lm_head_adapter_allowed(net):
        trainer = trainer_class(
            model=net,
            args=args,
            train_dataset=data.to_dataset(examples),
            eval_dataset=data.to_dataset(eval_examples) if eval_examples else None,
            processing_class=tokenizer,
        )
    model.keep_adapter_dtype(trainer.model)  # QLoRA in fp32: TRL made the adapter bf16
    if cfg.dataset.packed:
        log(
            f"packing: {len(examples)} examples in {len(trainer.train_dataset)} sequences of "
            f"up to {cfg.max_seq_len} tokens",
            rank,
        )
    batches = len(trainer.get_train_dataloader())
    steps = engine.steps_per_epoch(
        batches, len(trainer.train_dataset), cfg.batch_size, cfg.gradient_accumulation_steps, world
    )
    per_epoch = min(steps, cfg.max_steps_per_epoch or steps)
    run = engine.Run(
        rank=rank,
        epochs=cfg.epochs,
        output_dir=cfg.output_dir,
        steps_per_epoch=steps,
        epoch_steps=per_epoch,
        total_steps=cfg.epochs * per_epoch,
        tokenizer=tokenizer,
        epoch_saves=checkpoint.describe(rec.method),
        trainer=trainer,
    )
    trainer.run = run
    trainer.remove_callback(transformers.PrinterCallback)  # the step lines say it
    trainer.add_callback(engine.make_callback(run))
    reporting.install(trainer)  # progress (KEP-2779): the first loss and the last report sent
    log(f"lr schedule: {schedule_line.format(total=cfg.epochs * per_epoch)}", rank)
    net = trainer.model
    trainable = [p for p in net.parameters() if p.requires_grad]
    total = sum(p.numel() for p in net.parameters())
    log(f"model: {total} parameters, {sum(p.numel() for p in trainable)} trainable", rank)
    if engine.sharded(cfg, world):
        log(
            f"FSDP2: parameters, gradients and optimizer state sharded over {world} processes "
            f"({'nccl' if device.type == 'cuda' else 'gloo'}; about {total // world} parameters "
            f"each)",
            rank,
        )
    elif cfg.fsdp:
        log("fsdp=True but this run has one process: nothing to shard (a plain run)", rank)
    log(
        f"training: {cfg.epochs} epoch(s) of {per_epoch} step(s), batch {cfg.batch_size} x "
        f"{cfg.gradient_accumulation_steps} accumulation x {world} process(es)",
        rank,
    )
    resume = None
    if cfg.resume_from_checkpoint:
        resume, incomplete = checkpoint.newest_complete(cfg.output_dir)
        if rank == 0:
            for path in incomplete:
                log(f"checkpoint {path} was cut short (not marked complete): removing it")
                shutil.rmtree(path, ignore_errors=True)
        if resume is not None:
            step = int(resume.rsplit("-", 1)[1])
            log(f"resumed from checkpoint at step {step} ({resume})", rank)
    trainer.train(resume_from_checkpoint=resume)
    final = trainer.state.global_step
    if rank == 0:
        checkpoint.check_output_dir(cfg.output_dir)
    trainer.save_model(cfg.output_dir)
    if rank == 0:
        if rec.method is Method.LORA and not cfg.save_adapter_weights_only:
            if cfg.lora.quantize_base:
                log("merged model: not saved for QLoRA (its base is 4-bit); the adapter is", rank)
            else:
                where = checkpoint.save_merged(trainer.model, tokenizer, cfg.output_dir)
                log(f"saved merged model (the adapter folded into the base) to {where}", rank)
        tokenizer.save_pretrained(cfg.output_dir)
        files = sorted(p.name for p in Path(cfg.output_dir).iterdir() if p.is_file())
        log(
            f"saved {checkpoint.describe(rec.method)} to {cfg.output_dir}: {', '.join(files)} "
            f"({time.monotonic() - started:.1f}s, {final} steps)",
            rank,
        )
    if cfg.export_uri and rank == 0:
        from trainjob.trainers.llm import export

        export.upload(cfg.output_dir, cfg.export_uri)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of a training process: ``RECIPE --config CONFIG key=value ...``; exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        if not args:
            raise TrainerError(
                "usage: python -m trainjob.trainers.llm.train RECIPE --config CONFIG [key=value ...]"
            )
        config_name, overrides = argv_mod.parse_training(args[1:], args[0])
        gloo_exit.register()  # a finished DDP run exits 0, not torch 2.15's abort at exit
        train(config_mod.build(args[0], config_name, overrides))
    except TrainerError as exc:
        print(f"error: {exc}", file=sys.stderr, flush=True)
        return 1
    except KeyboardInterrupt:
        # torchrun's launcher reports the interrupt once; the workers leave quietly.
        return INTERRUPTED_EXIT
    return 0


if __name__ == "__main__":
    sys.exit(main())
