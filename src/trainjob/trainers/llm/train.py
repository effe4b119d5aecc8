"""The training loop one process runs: ``python -m trainjob.trainers.llm.train RECIPE --config ...``.

Started by torchrun for the distributed recipes (one process per device, RANK/WORLD_SIZE/
LOCAL_RANK in the env) or called in-process by :mod:`.launch` for single-device ones. It joins the
process group (nccl on GPUs, gloo on CPUs), loads the model and data, wraps the model in DDP with a
DistributedSampler, trains with AdamW (constant rate, or :mod:`.schedule`'s cosine), logs a line per optimizer step from rank 0 and saves from
rank 0 (:mod:`.checkpoint`).
"""

from __future__ import annotations

import contextlib
import functools
import math
import os
import sys
import time
from collections.abc import Sequence
from typing import Any

from trainjob.trainers import gloo_exit
from trainjob.trainers.llm import argv as argv_mod
from trainjob.trainers.llm import checkpoint, data, model, schedule
from trainjob.trainers.llm import config as config_mod
from trainjob.trainers.llm.errors import TrainerError
from trainjob.trainers.llm.recipes import Method

INTERRUPTED = "error: training interrupted (Ctrl-C); nothing was saved to output_dir"
INTERRUPTED_EXIT = 130
"""Exit code after Ctrl-C, as a shell gives (128 + SIGINT)."""


def log(line: str, rank: int = 0) -> None:
    """Print a line from rank 0 only."""
    if rank == 0:
        print(line, flush=True)


def format_step(epoch: int, epochs: int, step: int, steps: int, loss: float, lr: float) -> str:
    """``Epoch 1/2 step 3/10 loss 2.3456 lr 2e-05``."""
    return f"Epoch {epoch}/{epochs} step {step}/{steps} loss {loss:.4f} lr {lr:g}"


def format_epoch(epoch: int, epochs: int, losses: Sequence[float], seconds: float) -> str:
    """``Epoch 1/2 done: mean loss 2.3456 over 10 steps in 3.2s``: the trend a step's noise hides."""
    mean = sum(losses) / len(losses) if losses else float("nan")
    return f"Epoch {epoch}/{epochs} done: mean loss {mean:.4f} over {len(losses)} steps in {seconds:.1f}s"


def train(cfg: config_mod.TrainConfig) -> None:
    """Run the whole fine-tune described by ``cfg`` in this process (one rank of the job)."""
    import torch
    import torch.distributed as dist

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
    if distributed:
        dist.init_process_group(backend="nccl" if cuda else "gloo")
    try:
        _train(cfg, rank, world, device, dtype, distributed)
    finally:
        if distributed and dist.is_initialized():
            dist.destroy_process_group()


def _train(
    cfg: config_mod.TrainConfig, rank: int, world: int, device: Any, dtype: str, distributed: bool
) -> None:
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel
    from torch.utils.data import DataLoader, DistributedSampler, RandomSampler

    started = time.monotonic()
    seed = cfg.seed if cfg.seed is not None else 0
    torch.manual_seed(seed)
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
    rows = data.load_rows(cfg.dataset)
    examples, dropped = data.tokenize_rows(rows, cfg.dataset, tokenizer, cfg.max_seq_len)
    log(
        f"dataset: {len(examples)} examples"
        + (f" ({dropped} dropped: nothing left after truncation)" if dropped else ""),
        rank,
    )
    net = model.load_model(cfg, dtype, device)
    if rec.method is Method.LORA:
        net = model.apply_lora(net, cfg.lora)
        kind = "DoRA" if cfg.lora.use_dora else ("QLoRA" if cfg.lora.quantize_base else "LoRA")
        log(f"{kind}: rank {cfg.lora.lora_rank} on {', '.join(model.lora_targets(cfg.lora))}", rank)
    trainable = [p for p in net.parameters() if p.requires_grad]
    total = sum(p.numel() for p in net.parameters())
    log(f"model: {total} parameters, {sum(p.numel() for p in trainable)} trainable", rank)
    net.train()
    wrapped: Any = net
    if distributed:
        wrapped = DistributedDataParallel(
            net, device_ids=[device.index] if device.type == "cuda" else None
        )
    if distributed:
        sampler: Any = DistributedSampler(
            examples,  # type: ignore[arg-type]
            num_replicas=world,
            rank=rank,
            shuffle=True,
            seed=seed,
        )
    else:
        sampler = RandomSampler(examples, generator=torch.Generator().manual_seed(seed))
    pad_id = (
        tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    )
    loader: Any = DataLoader(
        examples,  # type: ignore[arg-type]
        batch_size=cfg.batch_size,
        sampler=sampler,
        collate_fn=functools.partial(data.collate, pad_id=pad_id),
    )
    accum = cfg.gradient_accumulation_steps
    steps = len(loader) // accum
    if steps == 0:
        raise TrainerError(
            f"dataset too small: {len(examples)} examples over {world} process(es) give fewer "
            f"batches than gradient_accumulation_steps={accum}; lower it or batch_size"
        )
    if cfg.max_steps_per_epoch is not None:
        steps = min(steps, cfg.max_steps_per_epoch)
    optimizer = torch.optim.AdamW(trainable, lr=cfg.lr, weight_decay=cfg.weight_decay)
    scheduler: Any = None
    if cfg.lr_scheduler is not None:
        total_steps = cfg.epochs * steps
        scheduler = torch.optim.lr_scheduler.LambdaLR(
            optimizer,
            functools.partial(
                schedule.factor,
                warmup_steps=cfg.warmup_steps,
                total_steps=total_steps,
                num_cycles=cfg.num_cycles,
            ),
        )
        log(
            f"lr schedule: cosine, {cfg.warmup_steps} warmup step(s) of {total_steps}, "
            f"peak {cfg.lr:g}",
            rank,
        )
    else:
        log(
            f"lr schedule: constant {cfg.lr:g} (lr_scheduler.num_warmup_steps=N: torchtune's "
            "cosine with warmup)",
            rank,
        )
    for epoch in range(cfg.epochs):
        if isinstance(sampler, DistributedSampler):
            sampler.set_epoch(epoch)
        step = 0
        running = 0.0
        epoch_losses: list[float] = []
        epoch_start = time.monotonic()
        for index, batch in enumerate(loader):
            last_micro = (index + 1) % accum == 0
            sync = contextlib.nullcontext() if last_micro or not distributed else wrapped.no_sync()
            with sync:
                out = wrapped(**{k: v.to(device) for k, v in batch.items()})
                loss = out.loss / accum
                loss.backward()
            running += float(loss.detach())
            if not last_micro:
                continue
            step_lr = float(optimizer.param_groups[0]["lr"])
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            if scheduler is not None:
                scheduler.step()
            step += 1
            value = torch.tensor([running], device=device)
            if distributed:
                dist.all_reduce(value)
                value /= world
            running = 0.0
            if not math.isfinite(float(value)):
                raise TrainerError(
                    f"loss is {float(value)} at epoch {epoch + 1} step {step}; lower optimizer.lr "
                    "or use dtype=fp32"
                )
            log(format_step(epoch + 1, cfg.epochs, step, steps, float(value), step_lr), rank)
            epoch_losses.append(float(value))
            if step >= steps:
                break
        log(format_epoch(epoch + 1, cfg.epochs, epoch_losses, time.monotonic() - epoch_start), rank)
        if rank == 0 and epoch + 1 < cfg.epochs:
            # torchtune's layout: a checkpoint per epoch, so a run stopped later keeps its progress
            where = os.path.join(cfg.output_dir, f"epoch_{epoch}")
            checkpoint.save(net, tokenizer, rec.method, where)
            log(f"saved epoch {epoch + 1} {checkpoint.describe(rec.method)} to {where}", rank)
    if distributed:
        dist.barrier()
    if rank == 0:
        files = checkpoint.save(net, tokenizer, rec.method, cfg.output_dir)
        log(
            f"saved {checkpoint.describe(rec.method)} to {cfg.output_dir}: {', '.join(files)} "
            f"({time.monotonic() - started:.1f}s)",
            rank,
        )
    if distributed:
        dist.barrier()


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
