"""The TRL methods this front end runs and their command line, parsed by TRL's own parsers.

``trl sft ...``, ``trl dpo ...`` and ``trl grpo ...`` take the flags of TRL's ``trl.scripts.sft``,
``trl.scripts.dpo`` and ``trl.scripts.grpo`` (script, training and model arguments, plus
``--config file.yaml``): the parser is the one each script builds, so a flag means here what it
means to TRL. GRPO generates its completions with transformers' ``generate`` in each process
(``--use_vllm`` needs vLLM, not installed here: refused in one line) and scores them with the
``--reward_funcs`` of :mod:`.rewards` or a local ``--reward_model_name_or_path``. Two defaults
differ, because the run happens in a TrainJob pod: on a machine without a CUDA GPU the run is
fp32 on the CPU (TRL would refuse its own bf16 default there unless told ``--use_cpu``);
tqdm bars, which make a pod's log unreadable, are off unless ``--disable_tqdm`` is given; and DDP
does not search for unused parameters unless ``--ddp_find_unused_parameters`` says so. One flag
is trainjob's own: ``trl sft --token_metrics False`` leaves out SFTTrainer's per-step entropy and
token accuracy where trainjob computes the loss (a device without Triton: the CPU), about 3% of
a CPU LoRA step at ``--logging_steps 1``, for a user who does not read them.
Called by :mod:`.launch` (to check before starting processes) and :mod:`.train` (each rank).
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NoReturn

from trainjob.trainers.llm.errors import TrainerError

METHODS = {"sft": "trl.scripts.sft", "dpo": "trl.scripts.dpo", "grpo": "trl.scripts.grpo"}
"""Method (the ``trl`` subcommand, KEP-626's ``TRLMethod`` value) -> the TRL script whose parser
and arguments it takes."""

USAGE = "trl {sft,dpo,grpo} --model_name_or_path PATH --dataset_name PATH [--flag value ...]"


@dataclass(frozen=True)
class Parsed:
    """A parsed ``trl METHOD ...`` command line."""

    method: str
    script: Any
    """TRL's ScriptArguments: dataset_name, dataset_config, dataset_train_split, ..."""
    training: Any
    """TRL's SFTConfig or DPOConfig (transformers' TrainingArguments)."""
    model: Any
    """TRL's ModelConfig: model_name_or_path, dtype, use_peft, lora_r, ..."""
    argv: tuple[str, ...]
    """The flags as given (after the method)."""
    token_metrics: bool = True
    """``--token_metrics`` (sft): log SFTTrainer's entropy and mean_token_accuracy."""


def method_of(argv: Sequence[str]) -> str:
    """The method (first word) of ``argv``, checked; :class:`TrainerError` with the usage."""
    if not argv:
        raise TrainerError(f"no method given; usage: {USAGE}")
    method = argv[0]
    if method not in METHODS:
        raise TrainerError(
            f'unknown method "{method}"; trainjob\'s trl runs {", ".join(METHODS)} (usage: {USAGE})'
        )
    return method


def given(flags: Sequence[str], name: str) -> bool:
    """Whether ``--name`` (or ``--name=...``) is among ``flags``."""
    return any(f == f"--{name}" or f.startswith(f"--{name}=") for f in flags)


def with_defaults(flags: Sequence[str], cuda: bool) -> list[str]:
    """``flags`` plus this front end's defaults for what the user did not set."""
    out = list(flags)
    if not cuda and not given(out, "use_cpu"):
        out.append("--use_cpu")
        if not given(out, "bf16"):
            out += ["--bf16", "False"]
    if not given(out, "disable_tqdm"):
        out += ["--disable_tqdm", "True"]
    if not given(out, "ddp_find_unused_parameters"):
        # transformers says True for any model that is not its own (a peft model): an extra
        # pass over the autograd graph each step, and a warning on every rank
        out += ["--ddp_find_unused_parameters", "False"]
    return out


def parse(argv: Sequence[str], cuda: bool) -> Parsed:
    """``METHOD --flag value ...`` -> :class:`Parsed`; every mistake a :class:`TrainerError`."""
    method = method_of(argv)
    flags = list(argv[1:])
    if method == "dpo" and given(flags, "max_prompt_length"):
        raise TrainerError(
            "--max_prompt_length is not a flag of this TRL (its DPO truncates prompt and "
            "completion together); use --max_length N"
        )
    import warnings

    # transformers' notes on names it renamed (TRL's own defaults use the old ones)
    warnings.filterwarnings("ignore", category=FutureWarning, module=r"transformers(\.|$)")
    parser = importlib.import_module(METHODS[method]).make_parser(prog=f"trl {method}")

    def error(message: str) -> NoReturn:
        raise TrainerError(f"trl {method}: {message}")

    parser.error = error  # argparse's own errors become one line, not usage + exit 2
    if method == "sft":
        from transformers.hf_argparser import string_to_bool

        parser.add_argument(
            "--token_metrics",
            type=string_to_bool,
            default=True,
            nargs="?",
            const=True,
            metavar="BOOL",
            help="trainjob: log SFTTrainer's entropy and mean_token_accuracy each logging step "
            "(False: leave them out where trainjob computes the loss, i.e. without Triton; "
            "about 3%% of a CPU LoRA step at --logging_steps 1)",
        )
    try:
        script, training, model, *rest = parser.parse_args_and_config(
            with_defaults(flags, cuda), fail_with_unknown_args=True
        )
    except (ValueError, OSError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise TrainerError(f"trl {method}: {first}") from None
    if not model.model_name_or_path:
        raise TrainerError(
            f"trl {method}: --model_name_or_path is not set; give the model's directory "
            "(the model initializer writes /workspace/model)"
        )
    if not script.dataset_name:
        raise TrainerError(
            f"trl {method}: --dataset_name is not set; give the dataset's directory or file "
            "(the dataset initializer writes /workspace/dataset)"
        )
    if method == "grpo":
        check_grpo(script, training)
    ours = next((r for r in rest if hasattr(r, "token_metrics")), None)  # HfArgumentParser's
    token_metrics = bool(getattr(ours, "token_metrics", True))  # namespace of the extra flags
    return Parsed(method, script, training, model, tuple(flags), token_metrics)


def check_grpo(script: Any, training: Any) -> None:
    """GRPO needs a reward, and generates without vLLM here."""
    from trainjob.trainers.llm.trl import rewards

    if not script.reward_funcs and not script.reward_model_name_or_path:
        raise TrainerError(
            "trl grpo: no reward; give --reward_funcs NAME ... (one of "
            f"{', '.join((*rewards.BUILTIN, *rewards.TRL_REWARDS))}, or a dotted import path "
            "module.function) or --reward_model_name_or_path PATH (a local reward model)"
        )
    rewards.resolve(script.reward_funcs)
    if training.use_vllm and importlib.util.find_spec("vllm") is None:
        raise TrainerError(
            "trl grpo: --use_vllm needs vLLM, which is not installed here (it needs a GPU); "
            "drop --use_vllm to generate with transformers in each process"
        )
