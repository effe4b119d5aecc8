"""trainjob's ``trl`` command: TRL's own scripts' flags (``trl sft|dpo|grpo --model_name_or_path ...``),
launched the way a TrainJob needs.

KEP-626's ``TRLConfig`` renders to ``trl <method> --flag value ...``; the TRL CLI hands that to
``accelerate launch``, which ignores the Torch plugin's ``PET_*`` env and, on CPU or one GPU a
pod, trains one process per node while reporting success (KEP-2839 I.4). Here the same argv is
parsed by TRL's own parsers (the dataclasses of ``trl.scripts.sft``/``dpo``/``grpo``, so every
flag, ``--config`` YAML and default is TRL's) and launched by torchrun from ``PET_*``, as the
``tune run`` front end is; each rank trains with TRL's SFTTrainer, DPOTrainer or GRPOTrainer under the same
engine (:mod:`..engine`): step lines, tokens/s, checkpoints marked complete and resumed
automatically, progress through :mod:`trainjob.trainers.reporting` (upstream's protocol).

Modules: :mod:`.methods` (the methods and parsing), :mod:`.launch` (checks, torchrun or
in-process), :mod:`.train` (what one rank runs), :mod:`.data` (the dataset, offline),
:mod:`.rewards` (GRPO's reward functions).
"""
