"""``trl METHOD --flag value ...`` as a TrainJob runs it: check, then torchrun from ``PET_*``.

The Torch plugin gives every node ``PET_NNODES``, ``PET_NPROC_PER_NODE``, ``PET_NODE_RANK``,
``PET_MASTER_ADDR`` and ``PET_MASTER_PORT``: torchrun's own env interface. With more than one
process in all, torchrun runs in this process (as ``tune run`` does) and starts one
:mod:`.train` worker per device; with one, the run trains here. The flags, the model folder,
the dataset and ``output_dir`` are checked first, so a bad run fails with one ``error:`` line
before any worker starts. Called by :mod:`.__main__`; the local backend runs a runtime's ``trl``
command here.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence

from trainjob import extras
from trainjob.trainers.llm import checkpoint
from trainjob.trainers.llm import launch as tune_launch
from trainjob.trainers.llm import model as llm_model
from trainjob.trainers.llm.errors import TrainerError
from trainjob.trainers.llm.trl import data, methods, train

TRAIN_MODULE = "trainjob.trainers.llm.trl.train"
NEEDS = (*extras.LLM_TRAINER, "trl", "datasets")


def processes(env: Mapping[str, str]) -> int | None:
    """Processes in the whole run from ``PET_*`` (None: torchrun decides, e.g. ``auto``)."""
    nodes = env.get("PET_NNODES", "1")
    per_node = env.get("PET_NPROC_PER_NODE", "1")
    if not (nodes.isdigit() and per_node.isdigit()):
        return None
    return int(nodes) * int(per_node)


def preflight(p: methods.Parsed) -> None:
    """What can be checked without a process group: the dataset, the model folder, output_dir."""
    model = p.model.model_name_or_path
    local = os.path.isabs(model) or model.startswith(".")
    if local and not os.path.isfile(os.path.join(model, "config.json")):
        raise TrainerError(
            f"--model_name_or_path={model} is not a Hugging Face model folder (no "
            "config.json); point it at one (the model initializer writes /workspace/model)"
        )
    loaded = data.load(p.script)
    data.check_columns(p.method, p.script, p.training, loaded[p.script.dataset_train_split])
    checkpoint.check_output_dir(p.training.output_dir)


def main(argv: Sequence[str] | None = None) -> int:
    """``METHOD --flag value ...``; returns the exit code."""
    llm_model.quiet_bitsandbytes()  # TRL's parser imports peft, which imports bitsandbytes
    args = list(sys.argv[1:] if argv is None else argv)
    missing = extras.message("trainjob's trl (TRL fine-tuning)", NEEDS)
    if missing:
        print(f"error: {missing}", file=sys.stderr, flush=True)
        return 1
    if args and args[0] in ("-h", "--help"):
        print(f"usage: {methods.USAGE}\n\n`trl METHOD --help` lists the flags of a method.")
        return 0
    try:
        import torch

        parsed = methods.parse(args, torch.cuda.is_available())
        preflight(parsed)
        if processes(os.environ) == 1:
            return train.main(args)
    except TrainerError as exc:
        print(f"error: {exc}", file=sys.stderr, flush=True)
        return 1
    except KeyboardInterrupt:
        return 130
    # torchrun reads PET_NNODES, PET_NPROC_PER_NODE, PET_NODE_RANK, PET_MASTER_ADDR/PORT itself
    return tune_launch.run_torchrun(["--module", TRAIN_MODULE, *args])


if __name__ == "__main__":
    sys.exit(main())
