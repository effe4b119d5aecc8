"""trainjob's LLM fine-tuning trainer: runs a ``tune run ...`` argv with transformers and peft.

The torchtune runtimes compile to ``tune run [--rdzv_endpoint=...] RECIPE --config CONFIG
key=value ...``; ``python -m trainjob.trainers.llm run ...`` takes the same argv (what follows
``tune``) and runs it for real without torchtune: full fine-tuning, LoRA, DoRA and QLoRA, an
instruct dataset, DDP across processes and nodes through torchrun, and checkpoints that load
with transformers and peft.

Modules, each with one job: :mod:`.errors` (the one-line error), :mod:`.recipes` (recipe and
config names), :mod:`.overrides` (the ``key=value`` keys and their parsers), :mod:`.config`
(the typed config: a recipe's defaults with the overrides), :mod:`.argv` (the
``tune run`` command line), :mod:`.launch` (torchrun or in-process), :mod:`.data` (reading and
preprocessing the dataset), :mod:`.model` (model, tokenizer, LoRA), :mod:`.train` (the training
loop a rank runs) and :mod:`.checkpoint` (what rank 0 writes).
"""
