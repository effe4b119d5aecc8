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


def checked_all_reduce() -> None:
    """Every rank adds its rank + 1; each checks the sum of all (a real gloo all-reduce)."""
    import os

    import torch
    import torch.distributed as dist

    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    t = torch.tensor([float(rank + 1)])
    dist.all_reduce(t)
    want = world * (world + 1) / 2
    if t.item() != want:
        raise SystemExit(f"rank {rank}: all_reduce gave {t.item()}, want {want}")
    print(f"allreduce ok rank={rank} world={world} sum={t.item():g} on {os.environ['HOSTNAME']}")
    dist.destroy_process_group()


def env_and_all_reduce(names: list[str], mark: str) -> None:
    """Print the env ``names`` as one JSON line after ``mark``, then a checked gloo all-reduce."""
    import json
    import os

    import torch
    import torch.distributed as dist

    print(mark + json.dumps({n: os.environ.get(n, "") for n in names}, sort_keys=True), flush=True)
    dist.init_process_group("gloo")
    t = torch.tensor([float(dist.get_rank() + 1)])
    dist.all_reduce(t)
    world = dist.get_world_size()
    if t.item() != world * (world + 1) / 2:
        raise SystemExit(f"all_reduce gave {t.item()}")
    print(f"allreduce ok rank={dist.get_rank()} world={world}", flush=True)
    dist.destroy_process_group()
