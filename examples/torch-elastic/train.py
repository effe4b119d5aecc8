"""An elastic DDP script: the torch elastic contract, checkpointed so a membership change resumes.

Run by examples/torch-elastic.yaml through torchrun's elastic agent (``--nnodes=2:3``, c10d
rendezvous). When a node is lost or added, torchrun stops every worker, the agents rendezvous
again and start the workers afresh with a new ``WORLD_SIZE`` and ranks: so a script must (1) read
its rank and world size from ``init_process_group`` each time it starts, (2) save a checkpoint
often (rank 0, atomically: write then rename) in a directory every node sees, and (3) resume from
it. Here the checkpoint holds the model, the optimizer (with its learning-rate schedule) and the
step; the data of step ``s`` depends only on ``s`` (each rank takes its shard of it), so after a
change no step is repeated or lost and the data order is kept. The checkpoint directory is
``$TRAINJOB_CHECKPOINT_DIR`` (kept after the job) when set, else ``./checkpoints``.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def say(line: str) -> None:
    """One write per line, so lines of ranks sharing a log never interleave."""
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def main() -> None:
    steps = int(os.environ.get("STEPS", "60"))
    pause = float(os.environ.get("STEP_SECONDS", "0.2"))  # a slow step, so a change lands mid-run
    ckpt_dir = Path(os.environ.get("TRAINJOB_CHECKPOINT_DIR") or "checkpoints")
    ckpt_dir.mkdir(parents=True, exist_ok=True)
    ckpt = ckpt_dir / "elastic.pt"

    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = torch.nn.Linear(8, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=20, gamma=0.5)
    step = 0
    if ckpt.exists():
        state = torch.load(ckpt)
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["opt"])
        sched.load_state_dict(state["sched"])
        step = state["step"]
    ddp = DDP(model)
    say(f"rank {rank}: world size {world}, from step {step}")

    truth = torch.randn(8, 1, generator=torch.Generator().manual_seed(1))
    while step < steps:
        gen = torch.Generator().manual_seed(1000 + step)  # step s's data, whoever runs it
        x = torch.randn(96, 8, generator=gen)
        y = x @ truth
        xs, ys = x.chunk(world)[rank], y.chunk(world)[rank]
        loss = torch.nn.functional.mse_loss(ddp(xs), ys)
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        step += 1
        if rank == 0:
            state = {
                "model": model.state_dict(),
                "opt": opt.state_dict(),
                "sched": sched.state_dict(),
                "step": step,
            }
            tmp = ckpt.with_suffix(".tmp")
            torch.save(state, tmp)
            os.replace(tmp, ckpt)
            say(f"step {step} world size {world} loss {loss.item():.5f}")
        time.sleep(pause)
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
