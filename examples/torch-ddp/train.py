"""A small distributed training run: DDP over gloo, on data it makes.

Run by examples/torch-ddp.yaml through torchrun (2 nodes x PET_NPROC_PER_NODE processes). Every rank
fits a linear model y = 3x - 1 + noise on its own shard of a synthetic data set; DDP averages the
gradients, rank 0 prints the loss per epoch. An all-reduce sanity check runs first: every rank
prints ``allreduce ok rank=R sum=S`` (S = 0 + 1 + ... + world-1), or fails.
"""

from __future__ import annotations

import os
import sys

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def say(line: str) -> None:
    """One write per line, so lines of ranks sharing a log never interleave."""
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def main() -> None:
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()

    t = torch.tensor([float(rank)])
    dist.all_reduce(t)
    expected = world * (world - 1) / 2
    assert t.item() == expected, f"all_reduce gave {t.item()}, expected {expected}"
    say(f"allreduce ok rank={rank} sum={t.item():g} world={world}")

    torch.manual_seed(0)
    x = torch.randn(4096, 1)
    y = 3 * x - 1 + 0.1 * torch.randn(4096, 1)
    shard = slice(rank, None, world)
    x, y = x[shard], y[shard]

    model = DDP(torch.nn.Linear(1, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    epochs = int(os.environ.get("EPOCHS", "3"))
    for epoch in range(epochs):
        total = 0.0
        for i in range(0, len(x), 64):
            opt.zero_grad()
            loss = torch.nn.functional.mse_loss(model(x[i : i + 64]), y[i : i + 64])
            loss.backward()
            opt.step()
            total += loss.item()
        if rank == 0:
            say(f"epoch {epoch + 1}/{epochs} loss {total / (len(x) / 64):.4f}")

    w, b = (p.item() for p in model.module.parameters())
    if rank == 0:
        say(f"done: y = {w:.2f}x {'-' if b < 0 else '+'} {abs(b):.2f}")
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    try:  # torch 2.15 can abort a finished DDP run at exit: see src/trainjob/trainers/gloo_exit.py
        from trainjob.trainers.gloo_exit import register
    except ImportError:  # an image without trainjob
        pass
    else:
        register()
    main()
