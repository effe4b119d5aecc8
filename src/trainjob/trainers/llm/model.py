"""The model side of a run: checkpoint dir checks, the tokenizer, the dtype, the model, LoRA.

The model is the Hugging Face checkpoint in ``checkpointer.checkpoint_dir`` (config.json,
*.safetensors, tokenizer files), loaded with transformers; LoRA, DoRA and QLoRA are peft adapters
on the modules torchtune's names map to (``output_proj`` -> ``o_proj``, MLP ->
``gate_proj/up_proj/down_proj``, output -> ``lm_head``). Called by :mod:`.train`; the cheap
checks (:func:`check_checkpoint_dir`, :func:`resolve_dtype`, :func:`check_qlora`) also by
:mod:`.launch` before any process starts.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

from trainjob import extras
from trainjob.trainers.llm.config import LoraConfig, TrainConfig
from trainjob.trainers.llm.errors import TrainerError

HF_MODULES = {
    "q_proj": ("q_proj",),
    "k_proj": ("k_proj",),
    "v_proj": ("v_proj",),
    "output_proj": ("o_proj",),
}
MLP_MODULES = ("gate_proj", "up_proj", "down_proj")
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json")


def check_checkpoint_dir(cfg: TrainConfig) -> Path:
    """The model dir, if it holds a Hugging Face checkpoint's config.json."""
    path = Path(cfg.checkpoint_dir)
    if not path.is_dir():
        raise TrainerError(
            f"checkpointer.checkpoint_dir={path} does not exist; point it at a Hugging Face "
            "model directory (the model initializer writes one to /workspace/model)"
        )
    if not (path / "config.json").is_file():
        raise TrainerError(
            f"checkpointer.checkpoint_dir={path} has no config.json; point it at a Hugging Face "
            "model directory (config.json, *.safetensors, tokenizer files)"
        )
    return path


def tokenizer_dir(cfg: TrainConfig) -> tuple[Path, str | None]:
    """Where the Hugging Face tokenizer is, and a log line when ``tokenizer.path`` is not used.

    torchtune's ``tokenizer.path`` names its own tokenizer file (``original/tokenizer.model``,
    ``vocab.json``); this trainer uses the Hugging Face tokenizer next to the checkpoint instead.
    """
    given = Path(cfg.tokenizer_path) if cfg.tokenizer_path else None
    if given is not None and given.is_dir() and _has_tokenizer(given):
        return given, None
    model_dir = Path(cfg.checkpoint_dir)
    if not _has_tokenizer(model_dir):
        raise TrainerError(
            f"checkpointer.checkpoint_dir={model_dir} has no tokenizer.json or "
            "tokenizer_config.json; save the Hugging Face tokenizer with the model"
        )
    note = None
    if given is not None:
        note = (
            f"tokenizer: tokenizer.path={given} is torchtune's tokenizer file; "
            f"using the Hugging Face tokenizer in {model_dir}"
        )
    return model_dir, note


def _has_tokenizer(path: Path) -> bool:
    return any((path / name).is_file() for name in TOKENIZER_FILES)


def resolve_dtype(cfg: TrainConfig, cuda: bool) -> str:
    """``fp32`` or ``bf16``: the override, else bf16 on a GPU that has it and fp32 elsewhere."""
    if cfg.dtype == "fp16":
        raise TrainerError(
            "dtype=fp16 is not supported (torchtune refuses it too); use dtype=bf16 or dtype=fp32"
        )
    if cfg.dtype is not None:
        return cfg.dtype
    return "bf16" if cuda else "fp32"


def check_qlora(lora: LoraConfig, cuda: bool) -> None:
    """QLoRA (``model.quantize_base=True``) needs bitsandbytes (its CPU backend works on CPU)."""
    if not lora.quantize_base:
        return
    if importlib.util.find_spec("bitsandbytes") is None:
        raise TrainerError(
            "model.quantize_base=True (QLoRA) needs bitsandbytes, which is not installed; "
            f"pip install {extras.install_target(['llm'])} (or bitsandbytes), or drop "
            "model.quantize_base for LoRA"
        )


def prepare_kbit(model: Any, checkpointing: bool) -> Any:
    """A 4-bit base made ready for LoRA training (norms in fp32, input grads for checkpointing)."""
    from peft import prepare_model_for_kbit_training

    return prepare_model_for_kbit_training(  # type: ignore[no-untyped-call]
        model, use_gradient_checkpointing=checkpointing
    )


def load_tokenizer(path: Path) -> Any:
    """The Hugging Face tokenizer, with a pad token (the eos token when it has none)."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(path))
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer


def torch_dtype(name: str) -> Any:
    """``fp32``/``bf16`` -> the torch dtype."""
    import torch

    return {"fp32": torch.float32, "bf16": torch.bfloat16}[name]


def load_model(cfg: TrainConfig, dtype: str, device: Any) -> Any:
    """The causal LM from the checkpoint dir, in ``dtype``, on ``device`` (4-bit for QLoRA)."""
    import transformers
    from transformers import AutoModelForCausalLM

    transformers.utils.logging.disable_progress_bar()  # type: ignore[no-untyped-call]
    kwargs: dict[str, Any] = {}
    dtype_key = "dtype" if int(transformers.__version__.split(".")[0]) >= 5 else "torch_dtype"
    kwargs[dtype_key] = torch_dtype(dtype)
    if cfg.lora.quantize_base:
        from transformers import BitsAndBytesConfig

        kwargs["quantization_config"] = BitsAndBytesConfig(  # type: ignore[no-untyped-call]
            load_in_4bit=True,
            bnb_4bit_quant_type="nf4",
            bnb_4bit_compute_dtype=torch_dtype(dtype),
        )
        kwargs["device_map"] = {"": device}
    try:
        model = AutoModelForCausalLM.from_pretrained(cfg.checkpoint_dir, **kwargs)
    except (OSError, ValueError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise TrainerError(
            f"cannot load the model in checkpointer.checkpoint_dir={cfg.checkpoint_dir}: {first}"
        ) from None
    if not cfg.lora.quantize_base:
        model.to(device)
    return model


def lora_targets(lora: LoraConfig) -> list[str]:
    """Hugging Face module names for torchtune's ``lora_attn_modules`` and ``apply_lora_to_*``."""
    targets = [name for module in lora.lora_attn_modules for name in HF_MODULES[module]]
    if lora.apply_lora_to_mlp:
        targets.extend(MLP_MODULES)
    if lora.apply_lora_to_output:
        targets.append("lm_head")
    if not targets:
        raise TrainerError(
            "LoRA has no modules to adapt; set model.lora_attn_modules=[q_proj,v_proj] "
            "or model.apply_lora_to_mlp=True"
        )
    return targets


def peft_config(lora: LoraConfig) -> Any:
    """The peft ``LoraConfig`` for these settings (``use_dora`` makes it DoRA)."""
    from peft import LoraConfig as PeftLoraConfig

    alpha: Any = int(lora.lora_alpha) if lora.lora_alpha.is_integer() else lora.lora_alpha
    return PeftLoraConfig(
        r=lora.lora_rank,
        lora_alpha=alpha,
        lora_dropout=lora.lora_dropout,
        target_modules=lora_targets(lora),
        use_dora=lora.use_dora,
        bias="none",
        task_type="CAUSAL_LM",
    )


def apply_lora(model: Any, lora: LoraConfig, checkpointing: bool = False) -> Any:
    """Wrap the model in a peft LoRA/DoRA model; only the adapter's weights train."""
    import warnings

    from peft import get_peft_model

    # peft asks transformers a deprecated question; the answer is the same, the warning is noise.
    warnings.filterwarnings(
        "ignore", message=".*is_gradient_checkpointing.*", category=FutureWarning
    )
    if lora.quantize_base:
        model = prepare_kbit(model, checkpointing)
    try:
        return get_peft_model(model, peft_config(lora))
    except ValueError as exc:
        raise TrainerError(
            f"cannot apply LoRA to {lora_targets(lora)}: {str(exc).splitlines()[0]}; "
            "check model.lora_attn_modules and model.apply_lora_to_*"
        ) from None


def keep_adapter_dtype(model: Any) -> int:
    """Undo TRL's cast of a 4-bit model's adapter to bf16 when the run is not bf16; the number
    of tensors cast back.

    TRL's trainers cast every trainable weight of a quantized model to bf16 (the QLoRA paper's
    choice, for a bf16 GPU run) whatever the run's dtype. In an fp32 run (the CPU's) AdamW's
    lr-sized steps are then below half a bf16 ulp of most LoRA A weights and are rounded away:
    the adapter learns slower than the same adapter in fp32, as peft, a plain loop and
    torchtune train it (benchmarks/finetune.py, QLoRA: loss 8.471 against 8.433 after 20 steps,
    step-1 losses equal). The trainable weights go back to the dtype of the model's own
    unquantized weights (the embeddings'), before the optimizer is made; a bf16 run is left as
    TRL made it. The bf16-rounded initial values stay (LoRA A is random, B zero).
    """
    if not (
        getattr(model, "is_loaded_in_4bit", False) or getattr(model, "is_loaded_in_8bit", False)
    ):
        return 0
    dtype = model.get_input_embeddings().weight.dtype
    cast = 0
    for param in model.parameters():
        if param.requires_grad and param.dtype != dtype and param.is_floating_point():
            param.data = param.data.to(dtype)
            cast += 1
    return cast


def quiet_bitsandbytes() -> None:
    """Keep bitsandbytes' import-time notice off stderr.

    peft imports bitsandbytes whenever it is installed, LoRA or not, and on a CPU with AVX-512
    BF16 bitsandbytes logs, on import, that it could not fetch a faster CPU kernel from the Hub
    (``Failed to load CPU gemm_4bit_forward from kernels-community: No module named
    'kernels'...``), through Python's last-resort handler: a line on every run's stderr, before
    a failed run's one ``error:`` line. Its CPU backend works without that kernel (QLoRA
    above); only errors are kept. Called first by each front end's training process.
    """
    import logging

    logging.getLogger("bitsandbytes").setLevel(logging.ERROR)
