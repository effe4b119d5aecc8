"""``python -m trainjob.trainers.llm run ...``: check the run, then start it like ``tune run``.

``tune run`` wraps torchrun: a distributed recipe runs ``torch.distributed.run`` (in this
process, as tune does) with the launcher options before the recipe and the PET_* env torchrun
reads itself (PET_NNODES, PET_NPROC_PER_NODE, PET_NODE_RANK, PET_MASTER_ADDR, PET_MASTER_PORT),
each worker running :mod:`.train`; a single-device recipe trains in this process. Config, model
dir and dataset are checked first, so a bad run fails with one ``error:`` line before any worker
starts. Called by :mod:`.__main__`; the local backend maps the runtimes' ``tune`` command here.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Mapping, Sequence

from trainjob import extras, threads
from trainjob.trainers.llm import argv as argv_mod
from trainjob.trainers.llm import checkpoint, data, export, model, train
from trainjob.trainers.llm import config as config_mod
from trainjob.trainers.llm.errors import TrainerError

TRAIN_MODULE = "trainjob.trainers.llm.train"
RDZV_ENDPOINT = ("--rdzv_endpoint", "--rdzv-endpoint")


def preflight(cfg: config_mod.TrainConfig, cuda: bool) -> None:
    """The checks that need no process group: model dir, tokenizer, dtype, QLoRA, output dir,
    dataset columns."""
    model.check_checkpoint_dir(cfg)
    model.tokenizer_dir(cfg)
    model.resolve_dtype(cfg, cuda)
    model.check_qlora(cfg.lora, cuda)
    checkpoint.check_output_dir(cfg.output_dir)
    export.check(cfg.export_uri)
    for row in data.load_rows(cfg.dataset):
        data.check_row(row, cfg.dataset)
    val = train.val_dataset(cfg)
    if val is not None:
        for row in data.load_rows(val):
            data.check_row(row, val)


def torchrun_args(inv: argv_mod.Invocation, env: Mapping[str, str]) -> tuple[list[str], str | None]:
    """torchrun's argv for this run, and a log line when ``--rdzv_endpoint`` gives way to PET_*.

    On a cluster the runtime's ``--rdzv_endpoint`` and PET_MASTER_ADDR/PORT name the same first
    node; on the local backend PET_MASTER_PORT is a free port while the runtime still says
    ``localhost:29500``, so PET_MASTER_ADDR/PET_MASTER_PORT win when both are set.
    """
    args: list[str] = []
    note = None
    pet = env.get("PET_MASTER_ADDR") and env.get("PET_MASTER_PORT")
    for name, value in inv.launcher:
        if name in RDZV_ENDPOINT and pet:
            note = (
                f"launcher: rendezvous at {env['PET_MASTER_ADDR']}:{env['PET_MASTER_PORT']} "
                f"(PET_MASTER_ADDR/PET_MASTER_PORT; {name}={value} not used)"
            )
            continue
        args.append(name if value is None else f"{name}={value}")
    return [*args, "--module", TRAIN_MODULE, *inv.training_argv()], note


def run_torchrun(args: Sequence[str]) -> int:
    """Run torchrun in this process, as ``tune run`` does; 1 if a worker failed."""
    from torch.distributed import run as torchrun
    from torch.distributed.elastic.multiprocessing.api import SignalException
    from torch.distributed.elastic.multiprocessing.errors import ChildFailedError

    parsed = torchrun.get_args_parser().parse_args(list(args))
    workers = str(parsed.nproc_per_node)
    if threads.ENV not in os.environ and workers.isdigit() and int(workers) > 1:
        # each worker its share of this node's cores (torchrun would give each one thread)
        os.environ[threads.ENV] = str(threads.share(int(workers)))
    try:
        torchrun.run(parsed)  # type: ignore[no-untyped-call]
    except SignalException as exc:
        # Ctrl-C or SIGTERM (a pod being deleted): torchrun has stopped the workers already.
        name = signal.Signals(exc.sigval).name
        print(
            f"error: training stopped by {name}; nothing was saved to output_dir",
            file=sys.stderr,
            flush=True,
        )
        return 128 + int(exc.sigval)
    except ChildFailedError as exc:
        ranks = ", ".join(
            f"rank {rank} (exit code {failure.exitcode})" for rank, failure in exc.failures.items()
        )
        print(f"error: training failed on {ranks}; see that rank's lines above", file=sys.stderr)
        return 1
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """``run [launcher options] RECIPE --config CONFIG key=value ...``; returns the exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    missing = extras.message("the LLM trainer (tune run)", extras.LLM_TRAINER)
    if missing:
        print(f"error: {missing}", file=sys.stderr, flush=True)
        return 1
    try:
        inv = argv_mod.parse_run(args)
        cfg = config_mod.build(inv.recipe, inv.config, inv.overrides)
        if not any(
            o.startswith(("dataset.data_dir=", "dataset.data_files=")) for o in inv.overrides
        ):
            print(
                f"dataset: no dataset.data_dir or dataset.data_files given; reading "
                f"{cfg.dataset.data_dir}, where the dataset initializer wrote it",
                flush=True,
            )
        import torch

        cuda = torch.cuda.is_available() and cfg.device != "cpu"
        preflight(cfg, cuda)
        if not cfg.recipe.distributed:
            train.train(cfg)
            return 0
        torchrun, note = torchrun_args(inv, os.environ)
    except TrainerError as exc:
        print(f"error: {exc}", file=sys.stderr, flush=True)
        return 1
    except KeyboardInterrupt:
        print(train.INTERRUPTED, file=sys.stderr, flush=True)
        return train.INTERRUPTED_EXIT
    if note:
        print(note, flush=True)
    try:
        return run_torchrun(torchrun)
    except KeyboardInterrupt:
        print(train.INTERRUPTED, file=sys.stderr, flush=True)
        return train.INTERRUPTED_EXIT
