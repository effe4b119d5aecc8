"""The training loop: TRL's SFTTrainer on transformers' Trainer and accelerate, set up from a
:class:`.config.TrainConfig`.

What the libraries give: DDP across torchrun's processes (gloo on CPU, nccl on GPU), the AdamW
step, torchtune's cosine-with-warmup schedule (transformers' has the same formula), gradient
accumulation with the loss normalised per token across micro-batches and ranks
(``num_items_in_batch``), gradient clipping and checkpointing, TRL's best-fit packing with
attention kept inside each example, eval, and resumable checkpoints (weights or adapter,
optimizer, scheduler, RNG, step; the data position by skipping what was seen).

What this module adds: for the torchtune front end, TRL's per-step entropy and token-accuracy
metrics are off (three all-gathers and a fused head per micro-batch, 10-20% of a CPU step), as
are Trainer's weight-decay exemptions (torchtune decays every parameter); for ``trl sft`` on a
device without Triton, the same loss from the model's own logits and those metrics only on the
steps that log them (:func:`plain_sft_loss`); DoRA layers' training forward without peft's
second pass of the frozen weight (:mod:`.dora`); on the CPU, LoRA's dropout with a cheaper
mask (:mod:`.dropout`), Llama-family RMSNorm and rotary embedding in fewer passes
(:mod:`.fused`), a heap that keeps the memory it frees (:mod:`.heap`: no page faults for each
step's tensors) and transformers' FLOPs count with the parameters counted once, not every
micro-batch; a log line per step in the format
the trainer always printed (``Epoch 1/3 step 2/4 loss 2.3456 lr 0.0003``) with the rate that
step used; tokens/s and the step, total and epoch in the logged metrics, which
:mod:`trainjob.trainers.reporting` (in place of transformers' own ``KubeflowCallback``) reports
with progress and ETA through upstream's TrainJob status endpoint (KEP-2779); a checkpoint after each
epoch but the last and every ``save_every_n_steps``, each marked complete only once every rank
has written it (:mod:`.checkpoint`), and torchtune's per-epoch model folders. Called by
:mod:`.train`.
"""

from __future__ import annotations

import contextlib
import math
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from trainjob.trainers.llm import checkpoint, dora, dropout, fused, heap
from trainjob.trainers.llm import config as config_mod
from trainjob.trainers.llm.errors import TrainerError


def log(line: str, rank: int = 0) -> None:
    """Print a line from rank 0 only."""
    if rank == 0:
        print(line, flush=True)


def format_step(epoch: int, epochs: int, step: int, steps: int, loss: float, lr: float) -> str:
    """``Epoch 1/2 step 3/10 loss 2.3456 lr 2e-05``."""
    return f"Epoch {epoch}/{epochs} step {step}/{steps} loss {loss:.4f} lr {lr:g}"


def format_epoch(epoch: int, epochs: int, losses: list[float], seconds: float) -> str:
    """``Epoch 1/2 done: mean loss 2.3456 over 10 steps in 3.2s``: the trend a step's noise hides."""
    if not losses:  # no step was logged in it (logging_steps longer than the epoch)
        return f"Epoch {epoch}/{epochs} done in {seconds:.1f}s"
    mean = sum(losses) / len(losses)
    return f"Epoch {epoch}/{epochs} done: mean loss {mean:.4f} over {len(losses)} steps in {seconds:.1f}s"


@dataclass
class Run:
    """What the callbacks share about the run in progress."""

    rank: int
    epochs: int
    output_dir: str
    steps_per_epoch: int
    """Optimizer steps in a full epoch (as transformers counts them)."""
    epoch_steps: int
    """Steps each epoch runs: ``steps_per_epoch``, or ``max_steps_per_epoch`` when fewer."""
    tokenizer: Any
    total_steps: int | None = None
    """Steps the whole run takes, when they differ from what transformers computes
    (torchtune's ``max_steps_per_epoch``): progress and ETA are reported against it."""
    epoch_saves: str | None = None
    """What the model after each epoch but the last is saved as (torchtune's ``epoch_N/``
    folders, e.g. "LoRA adapter (peft)"); None: no per-epoch copies (TRL's behaviour)."""
    trainer: Any = None
    step_lr: float = 0.0
    epoch_losses: dict[int, list[float]] = field(default_factory=dict)
    epoch_started: float = field(default_factory=time.monotonic)
    tokens: list[float] = field(default_factory=lambda: [0.0, 0.0])
    """Real (non-padding) and padded tokens this rank has fed the model since the last log."""
    seen_tokens: float = 0.0
    """Real tokens this rank has fed the model up to the last log."""
    plain_loss: bool = False
    """Whether SFT's loss is the model's own (:func:`plain_sft_loss`): then the trainer, not
    SFTTrainer, reports ``num_tokens``."""
    last_log: float = field(default_factory=time.monotonic)
    token_metrics: bool = True
    """Whether SFT with :func:`plain_sft_loss` logs entropy and token accuracy (``trl sft
    --token_metrics``)."""

    def position(self, global_step: int) -> tuple[int, int]:
        """(epoch, step within it), both from 1, of optimizer step ``global_step`` (from 1).

        Over the steps each epoch runs (``epoch_steps``): an epoch cut short by
        ``max_steps_per_epoch`` ends transformers' epoch loop, and the next step is the next
        epoch's first (not step 3 of 2 of the same epoch, whose copy it would overwrite)."""
        return (global_step - 1) // self.epoch_steps + 1, (global_step - 1) % self.epoch_steps + 1

    def steps_in(self, epoch: int, max_steps: int) -> int:
        """Steps epoch ``epoch`` runs when the whole run stops at step ``max_steps`` (TRL's
        ``--max_steps``: the last epoch may stop early; ``2/2``, not ``2/20``)."""
        left = max_steps - (epoch - 1) * self.epoch_steps
        return min(self.epoch_steps, left) if left > 0 else self.epoch_steps


def seed_of(cfg: config_mod.TrainConfig) -> int:
    """The run's seed: ``seed``, or 0 when unset, so that two runs of one command train alike
    (and a resumed run continues the run it resumes)."""
    return cfg.seed if cfg.seed is not None else 0


def seed_everything(cfg: config_mod.TrainConfig) -> None:
    """Seed Python, NumPy and torch before the model is built: the LoRA adapter's initial
    weights come from torch's RNG, and transformers' Trainer only seeds once it is created,
    after the adapter exists (unseeded, each run of the same command started elsewhere)."""
    from transformers import set_seed

    set_seed(seed_of(cfg))


def training_arguments(cfg: config_mod.TrainConfig, cuda: bool, world: int) -> Any:
    """TRL's SFTConfig (transformers' TrainingArguments) for this run."""
    from trl import SFTConfig  # type: ignore[attr-defined]

    return SFTConfig(**training_kwargs(cfg, cuda, world))


def training_kwargs(cfg: config_mod.TrainConfig, cuda: bool, world: int) -> dict[str, Any]:
    """The arguments of :func:`training_arguments` (SFTConfig with FSDP can only be made in a
    process group: the tests read these)."""
    steps = cfg.save_every_n_steps
    evaluating = cfg.dataset_val is not None
    return dict(
        output_dir=checkpoint.checkpoints_dir(cfg.output_dir),
        per_device_train_batch_size=cfg.batch_size,
        per_device_eval_batch_size=cfg.batch_size,
        gradient_accumulation_steps=cfg.gradient_accumulation_steps,
        num_train_epochs=cfg.epochs,
        learning_rate=cfg.lr,
        weight_decay=cfg.weight_decay,
        adam_beta1=0.9,
        adam_beta2=0.999,
        adam_epsilon=1e-8,
        optim="adamw_torch_fused" if cfg.fused else "adamw_torch",
        lr_scheduler_type="cosine" if cfg.lr_scheduler else "constant",
        lr_scheduler_kwargs={"num_cycles": cfg.num_cycles} if cfg.lr_scheduler else {},
        warmup_steps=cfg.warmup_steps if cfg.lr_scheduler else 0,
        max_grad_norm=cfg.clip_grad_norm or 0.0,
        **checkpointing(cfg.activation_checkpointing and not sharded(cfg, world)),
        **fsdp_arguments(cfg, world),
        logging_steps=cfg.log_every_n_steps,
        logging_strategy="steps",
        save_strategy="steps" if steps else "no",
        save_steps=steps or 500,
        save_only_model=False,
        eval_strategy=("steps" if cfg.run_val_every_n_steps else "epoch") if evaluating else "no",
        eval_steps=cfg.run_val_every_n_steps,
        seed=seed_of(cfg),
        data_seed=seed_of(cfg),
        use_cpu=not cuda,
        ddp_backend=("nccl" if cuda else "gloo") if world > 1 else None,
        ddp_find_unused_parameters=False,
        dataloader_drop_last=True,
        dataloader_num_workers=0,
        report_to="none",
        disable_tqdm=True,
        torch_compile=cfg.compile,
        packing=cfg.dataset.packed,
        packing_strategy="bfd",
        max_length=cfg.max_seq_len if cfg.dataset.packed else None,
        completion_only_loss=False,
        dataset_num_proc=None,
        remove_unused_columns=False,
        average_tokens_across_devices=True,
    )


def sharded(cfg: config_mod.TrainConfig, world: int) -> bool:
    """Whether this run shards the model with FSDP2 (``fsdp=True`` over more than one process)."""
    return cfg.fsdp and world > 1


def fsdp_arguments(cfg: config_mod.TrainConfig, world: int) -> dict[str, Any]:
    """transformers' ``fsdp``/``fsdp_config`` for accelerate's FSDP2 (``fully_shard`` of each
    decoder layer, the classes the model's ``_no_split_modules`` names, then the root).

    The full state dict is gathered for saving, so output_dir holds one ``model.safetensors``
    that loads anywhere, as a DDP run's does; activation checkpointing is FSDP's own (the
    training argument would add an all-gather in the backward pass).
    """
    if not sharded(cfg, world):
        return {}
    return {
        "fsdp": True,
        "fsdp_config": {
            "version": 2,
            "reshard_after_forward": cfg.fsdp_reshard_after_forward,
            "cpu_offload": cfg.fsdp_cpu_offload,
            "activation_checkpointing": cfg.activation_checkpointing,
            "state_dict_type": "FULL_STATE_DICT",
            "cpu_ram_efficient_loading": False,
        },
    }


def enable_fsdp_on_cpu(trainer: Any) -> None:
    """accelerate applies an FSDP plugin on accelerators only (MULTI_CPU keeps DDP); FSDP2's
    ``fully_shard`` itself runs on CPU tensors over gloo, so on CPU the plugin is set here,
    after the accelerator is made and before the model is wrapped."""
    from accelerate import PartialState  # type: ignore[import-untyped]
    from accelerate.utils import (  # type: ignore[import-untyped]
        DistributedType,
        FullyShardedDataParallelPlugin,
    )

    state = trainer.accelerator.state
    if trainer.args.fsdp_plugin_args is None or getattr(state, "fsdp_plugin", None) is not None:
        return
    state.fsdp_plugin = FullyShardedDataParallelPlugin(**trainer.args.fsdp_plugin_args)
    state.distributed_type = DistributedType.FSDP
    # every AcceleratorState() made later copies PartialState's type over its own
    PartialState().distributed_type = DistributedType.FSDP
    trainer.is_fsdp_enabled = True


def save_gathered(trainer: Any, output_dir: str, state_dict: dict[str, Any]) -> None:
    """Rank 0 writes the gathered full state dict of an FSDP model as a plain checkpoint.

    transformers' ``save_pretrained`` on the sharded model looks for tied weights in its
    parameters, which are shards (DTensors) it cannot flatten; a plain copy of the model built
    from its config holds the full weights and saves as any other checkpoint.
    """
    import torch
    from transformers import AutoModelForCausalLM

    if not trainer.args.should_save:
        return
    config = trainer.model.config
    with torch.device("meta"):
        plain = AutoModelForCausalLM.from_config(config, torch_dtype=trainer.model.dtype)  # type: ignore[no-untyped-call]
    plain.load_state_dict(state_dict, strict=False, assign=True)
    plain.tie_weights()
    plain.save_pretrained(output_dir)
    torch.save(trainer.args, os.path.join(output_dir, "training_args.bin"))


def checkpointing(on: bool) -> dict[str, Any]:
    """Activation (gradient) checkpointing arguments, by the name this transformers uses."""
    import dataclasses

    from transformers import TrainingArguments

    names = {f.name for f in dataclasses.fields(TrainingArguments)}
    name = (
        "activation_checkpointing"
        if "activation_checkpointing" in names
        else "gradient_checkpointing"
    )
    return {name: on, f"{name}_kwargs": {"use_reentrant": False} if on else None}


@contextlib.contextmanager
def lm_head_adapter_allowed(model: Any) -> Iterator[None]:
    """Let SFTTrainer take a model with LoRA on ``lm_head`` (``apply_lora_to_output=True``).

    TRL refuses it because its fused LM head reads ``lm_head.weight`` and would skip the
    adapter; this trainer's loss is transformers' own over the model's logits (the adapter is
    in them), so while the trainer is built the model shows TRL its plain output layer.
    """
    head = model.get_output_embeddings()
    base = getattr(head, "base_layer", None)
    if base is None:
        yield
        return
    model.get_output_embeddings = lambda: base
    try:
        yield
    finally:
        del model.get_output_embeddings


def make_trainer_class(base: Any = None, torchtune: bool = True) -> Any:
    """``base`` (TRL's SFTTrainer unless given, e.g. DPOTrainer) with tokens/s in the logged
    metrics; for the torchtune front end also torchtune's weight decay (every parameter), its
    schedule length, and the plain cross-entropy without TRL's per-step SFT metrics."""
    import torch
    import transformers

    if base is None:
        from trl import SFTTrainer  # type: ignore[attr-defined]

        base = SFTTrainer

    class Trainer(base):  # type: ignore[misc]
        run: Run

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            # DoRA layers (peft's, as the trainer made or was given them) train without a
            # second pass of the frozen weight on the dropped-out input (dora.py)
            dora.install(self.model)
            # LoRA's dropout masks drawn more cheaply than torch's on the CPU (dropout.py)
            dropout.install(self.model)
            if self.args.device.type == "cpu":
                heap.keep_freed_memory()  # no page faults for each step's tensors (heap.py)
                if not self.args.torch_compile:  # (which fuses them itself)
                    fused.install(self.model)  # RMSNorm and RoPE in fewer passes (fused.py)
            self.flos_per_token: tuple[Any, int] | None = None
            self.clipped_params: tuple[Any, list[Any]] | None = None

        def floating_point_ops(self, inputs: dict[str, Any]) -> int:
            """transformers' count (6 x tokens x non-embedding parameters), the parameters
            counted once per model, not every micro-batch (a walk of every module: 0.3% of a
            LoRA step on the CPU)."""
            name = getattr(self.model, "main_input_name", "input_ids")
            if name not in inputs or not hasattr(self.model, "num_parameters"):
                return int(super().floating_point_ops(inputs))
            if self.flos_per_token is None or self.flos_per_token[0] is not self.model:
                self.flos_per_token = (
                    self.model,
                    6 * int(self.model.num_parameters(exclude_embeddings=True)),
                )
            return self.flos_per_token[1] * int(inputs[name].numel())

        def _clip_grad_norm(self, model: Any) -> Any:
            """transformers' clipping, given the parameters that have gradients this step (the
            model's parameters listed once) where the model is plain or under DDP: its
            ``model.parameters()`` walks every module each step, the frozen ones of a LoRA
            fine-tune too (0.5% of a CPU LoRA step of benchmarks/finetune.py, against 0.2% for
            the plain loop's clipping). FSDP, DeepSpeed, XLA and sharded gradients (DTensors)
            keep transformers' own path, which looks for the model's exact parameter list."""
            from accelerate.utils import DistributedType

            plain = (DistributedType.NO, DistributedType.MULTI_CPU, DistributedType.MULTI_GPU)
            if self.accelerator.distributed_type not in plain or self._has_mixed_mesh_grads(model):
                return super()._clip_grad_norm(model)
            if self.clipped_params is None or self.clipped_params[0] is not model:
                self.clipped_params = (model, list(model.parameters()))
            params = [p for p in self.clipped_params[1] if p.grad is not None]
            return self.accelerator.clip_grad_norm_(params, self.args.max_grad_norm)

        def count_tokens(self, inputs: dict[str, Any]) -> None:
            """Real and padded tokens of a micro-batch (GRPO's: its prompts and completions)."""
            pairs = [("input_ids", "attention_mask")]
            if "input_ids" not in inputs:
                pairs = [("prompt_ids", "prompt_mask"), ("completion_ids", "completion_mask")]
            for ids_key, mask_key in pairs:
                ids, mask = inputs.get(ids_key), inputs.get(mask_key)
                if ids is None:
                    continue
                self.run.tokens[0] += float(mask.sum()) if mask is not None else float(ids.numel())
                self.run.tokens[1] += float(ids.numel())

        def create_accelerator_and_postprocess(self) -> None:
            super().create_accelerator_and_postprocess()
            enable_fsdp_on_cpu(self)

        def _save(self, output_dir: str | None = None, state_dict: Any = None) -> None:
            if (
                self.is_fsdp_enabled
                and state_dict is not None
                and not hasattr(self.model, "peft_config")
            ):
                save_gathered(self, output_dir or self.args.output_dir, state_dict)
                return
            super()._save(output_dir, state_dict)

        def compute_loss(  # type: ignore[no-untyped-def]
            self, model, inputs, return_outputs=False, num_items_in_batch=None
        ):
            self.count_tokens(inputs)
            if torchtune:
                return transformers.Trainer.compute_loss(
                    self, model, inputs, return_outputs, num_items_in_batch
                )
            if plain_sft_loss(self, inputs):
                return self.sft_loss_with_metrics(model, inputs, return_outputs, num_items_in_batch)
            return super().compute_loss(model, inputs, return_outputs, num_items_in_batch)

        def sft_loss_with_metrics(
            self, model: Any, inputs: dict[str, Any], return_outputs: bool, num_items_in_batch: Any
        ) -> Any:
            """SFTTrainer's loss and metrics, the loss from the model's own logits (TRL's
            fused head is a pure-torch fallback off Triton that computes the logits again in
            the backward pass), entropy and token accuracy only for a step that logs them."""
            mode = "train" if self.model.training else "eval"
            self.run.plain_loss = True
            inputs["use_cache"] = False
            loss, outputs = transformers.Trainer.compute_loss(
                self, model, inputs, True, num_items_in_batch
            )
            if self.run.token_metrics and (mode == "eval" or logs_next_step(self.args, self.state)):
                sums = token_metrics(outputs.logits.detach(), inputs["labels"])
                sums = self.accelerator.gather(sums).view(-1, 3).sum(0)  # every rank's
                valid, entropy, correct = (float(x) for x in sums)
                self._metrics[mode]["entropy"].append(entropy / valid if valid > 0 else 0.0)
                self._metrics[mode]["mean_token_accuracy"].append(
                    correct / valid if valid > 0 else 0.0
                )
            return (loss, outputs) if return_outputs else loss

        if torchtune:

            def create_scheduler(self, num_training_steps: int, optimizer: Any = None) -> Any:
                # torchtune's total: every epoch's steps as run (max_steps_per_epoch shortens them)
                total = self.run.epochs * self.run.epoch_steps
                return super().create_scheduler(total, optimizer)

            def get_decay_parameter_names(self, model: Any) -> list[str]:
                return [name for name, _ in model.named_parameters()]

        def log(self, logs: dict[str, float], start_time: float | None = None) -> None:
            if "loss" in logs:
                now = time.monotonic()
                self.run.seen_tokens += self.run.tokens[0]
                counts = torch.tensor([*self.run.tokens, self.run.seen_tokens], dtype=torch.float64)
                if torch.distributed.is_available() and torch.distributed.is_initialized():
                    torch.distributed.all_reduce(counts)
                if self.run.plain_loss and self.model.training:
                    # SFTTrainer's num_tokens (real tokens so far, every rank's), summed here
                    # once per log rather than gathered every step
                    self._metrics["train"]["num_tokens"] = [int(counts[2])]
                seconds = max(now - self.run.last_log, 1e-9)
                logs["tokens_per_second"] = round(float(counts[0]) / seconds, 1)
                logs["padded_tokens_per_second"] = round(float(counts[1]) / seconds, 1)
                self.run.tokens = [0.0, 0.0]
                self.run.last_log = now
                # the position in the logged metrics too, for whatever reads the logs (the
                # progress reports set it themselves: trainers/reporting.py)
                logs["current_step"] = self.state.global_step
                logs["total_steps"] = self.state.max_steps
                if self.state.epoch is not None:
                    logs["current_epoch"] = round(float(self.state.epoch), 2)
            super().log(logs, start_time)

    return Trainer


def plain_sft_loss(trainer: Any, inputs: dict[str, Any]) -> bool:
    """Whether SFTTrainer's loss for ``inputs`` is the model's own cross-entropy over its logits,
    the same number (TRL's ``nll`` loss, no label smoothing, no loss function of the user's, no
    MoE auxiliary loss, no sequence parallelism), on a device without Triton, where TRL's fused
    LM head runs its pure-torch fallback: the logits once more in the backward pass and the
    per-step metrics, about 10% of a CPU step of a LoRA fine-tune (benchmarks/finetune.py)."""
    from trl import SFTTrainer  # type: ignore[attr-defined]

    if not isinstance(trainer, SFTTrainer) or "labels" not in inputs or "shift_labels" in inputs:
        return False
    args: Any = trainer.args
    if args.loss_type != "nll" or trainer.label_smoother is not None:
        return False
    if trainer.compute_loss_func is not None or getattr(trainer, "aux_loss_enabled", False):
        return False
    parallel = getattr(trainer.accelerator, "parallelism_config", None)
    if parallel is not None and (parallel.sp_enabled or parallel.cp_enabled):
        return False
    return bool(inputs["labels"].device.type not in ("cuda", "xpu"))


def logs_next_step(args: Any, state: Any) -> bool:
    """Whether the optimizer step in progress is one transformers' Trainer logs (its
    DefaultFlowCallback's rule, and the last step, whose metrics close the run)."""
    strategy = getattr(args.logging_strategy, "value", args.logging_strategy)
    if strategy != "steps":
        return bool(strategy == "epoch")  # an epoch's log averages all its steps, as TRL's
    step = state.global_step + 1
    every = max(int(state.logging_steps or 1), 1)
    first = step == 1 and bool(args.logging_first_step)
    return step % every == 0 or first or step >= state.max_steps


def token_metrics(logits: Any, labels: Any) -> Any:
    """(scored tokens, their entropy's sum, correct top-1 predictions) of a micro-batch, as
    SFTTrainer computes them: next-token positions whose label is not -100.

    In three passes over the logits, with one temporary of their size, and no copy of the
    scored rows: one max (its values and its indices, the top-1 predictions), the exponentials
    shifted by it, then their sum and their dot product with the logits, for the entropy
    ``log sum e^z - E_p[z]``. A third of the time of ``softmax``, ``logsumexp`` and ``argmax``
    over the masked rows (24 ms a step of the benchmark's LoRA run on one thread: 4.5% of it).
    """
    import torch

    with torch.no_grad():
        shifted = labels[:, 1:]
        mask = shifted != -100
        z = logits[:, :-1].float()
        top, predicted = z.max(dim=-1)
        e = (z - top.unsqueeze(-1)).exp_()
        total = e.sum(-1)
        entropy = total.log() + top - torch.linalg.vecdot(e, z) / total
        scored = mask.to(z.dtype)
        correct = ((predicted == shifted) & mask).sum().to(z.dtype)
        return torch.stack([scored.sum(), (entropy * scored).sum(), correct]).reshape(1, 3)


def make_callback(run: Run) -> Any:
    """The callback that prints the step lines, saves per epoch, and marks checkpoints."""
    from transformers import TrainerCallback

    class Progress(TrainerCallback):
        def on_train_begin(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            # progress and ETA (trainers/reporting.py) over the steps that will run
            if run.total_steps:
                state.max_steps = run.total_steps

        def on_step_begin(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            optimizer = kw.get("optimizer")
            if optimizer is not None:
                run.step_lr = float(optimizer.param_groups[0]["lr"])

        def on_step_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            _, step = run.position(state.global_step)
            if run.epoch_steps < run.steps_per_epoch and step == run.epoch_steps:
                control.should_epoch_stop = True  # max_steps_per_epoch

        def on_log(self, args: Any, state: Any, control: Any, logs: Any = None, **kw: Any) -> None:
            if not logs or "loss" not in logs or state.global_step == 0:
                return
            loss = float(logs["loss"])
            epoch, step = run.position(state.global_step)
            if not math.isfinite(loss):
                raise TrainerError(
                    f"loss is {loss} at epoch {epoch} step {step}; lower optimizer.lr or use "
                    "dtype=fp32"
                )
            run.epoch_losses.setdefault(epoch, []).append(loss)
            shown = run.steps_in(epoch, int(state.max_steps or 0))
            line = format_step(epoch, run.epochs, step, shown, loss, run.step_lr)
            if "rewards/margins" in logs:  # DPO: how far chosen answers lead rejected ones
                line += f" reward margin {float(logs['rewards/margins']):.4f}"
            elif "reward" in logs:  # GRPO: the mean reward of the step's completions
                line += f" reward {float(logs['reward']):.4f}"
            log(line, run.rank)

        def on_evaluate(
            self, args: Any, state: Any, control: Any, metrics: Any = None, **kw: Any
        ) -> None:
            if metrics and "eval_loss" in metrics:
                epoch, step = run.position(max(state.global_step, 1))
                log(
                    f"Epoch {epoch}/{run.epochs} step {step} eval loss {metrics['eval_loss']:.4f}",
                    run.rank,
                )

        def on_epoch_begin(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            run.epoch_started = time.monotonic()

        def on_epoch_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            epoch, _ = run.position(max(state.global_step, 1))
            losses = run.epoch_losses.get(epoch, [])
            log(
                format_epoch(epoch, run.epochs, losses, time.monotonic() - run.epoch_started),
                run.rank,
            )
            if epoch < run.epochs and run.epoch_saves is not None:
                # torchtune's layout: the model after each epoch, so a run stopped later keeps it
                where = os.path.join(run.output_dir, f"epoch_{epoch - 1}")
                run.trainer.save_model(where)
                if run.rank == 0:
                    run.tokenizer.save_pretrained(where)
                log(f"saved epoch {epoch} {run.epoch_saves} to {where}", run.rank)
                control.should_save = True  # and a resumable checkpoint

        def on_save(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            import torch.distributed as dist

            if dist.is_available() and dist.is_initialized():
                dist.barrier()  # every rank's files (its RNG state) are written
            if run.rank == 0:
                where = checkpoint.mark_complete(args.output_dir, state.global_step)
                epoch, _ = run.position(max(state.global_step, 1))
                log(f"checkpoint at step {state.global_step} (epoch {epoch}) saved to {where}")

    return Progress()


def steps_per_epoch(batches: int, examples: int, batch_size: int, accum: int, world: int) -> int:
    """Optimizer steps in one epoch, as transformers counts them: ``batches`` (this rank's full
    batches) over ``accum`` (gradient accumulation steps), the last step taking what remains."""
    if batches == 0:
        raise TrainerError(
            f"dataset too small: {examples} examples over {world} process(es) do not fill one "
            f"batch of batch_size={batch_size} on each; lower batch_size or add rows"
        )
    return batches // accum + int(batches % accum > 0)
