"""Training functions the SDK e2e tests ship to real local jobs (they need a source file)."""


def ddp_all_reduce(epochs: int = 1) -> None:
    import os

    import torch
    import torch.distributed as dist

    dist.init_process_group("gloo")
    rank = dist.get_rank()
    t = torch.ones(1) * (rank + 1)
    dist.all_reduce(t)
    print(f"rank {rank}/{dist.get_world_size()} sum={t.item()} epochs={epochs}", flush=True)
    print(f"PATH set={bool(os.environ.get('PATH'))} MYENV={os.environ.get('MYENV')}", flush=True)
    dist.destroy_process_group()


def hello(message: str = "hi") -> None:
    import os

    print(f"message={message}", flush=True)
    print(f"cwd_files={sorted(os.listdir('.'))}", flush=True)


def slow_lines(n: int = 3, pause: float = 1.0) -> None:
    import time

    for i in range(n):
        print(f"line {i} at {time.time():.3f}", flush=True)
        time.sleep(pause)


def fail() -> None:
    raise SystemExit("boom: training failed on purpose")


def env_dump() -> None:
    import os

    print(f"PATH set={bool(os.environ.get('PATH'))}", flush=True)
    print(f"A={os.environ.get('A')} B={os.environ.get('B')}", flush=True)
