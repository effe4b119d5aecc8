"""Type checks of what users pass to ``TrainerClient``, before anything is built or submitted.

Python does not check annotations, so ``resources_per_node="cpu=2"`` failed deep inside as an
AttributeError, ``packages_to_install="numpy"`` installed ``n``, ``u``, ``m``... and
``get_job_logs(name, step=5)`` raised a TypeError from string formatting. Each check here raises a
``TypeError`` (wrong type) or ``ValueError`` (wrong value) that names the argument, what it got and
what it takes. Called by :class:`trainjob.client.TrainerClient` for every method, so both
backends get the same messages; the values themselves (quantities, env names) are checked where
the TrainJob is built (``client.builder``) and validated (``trainjob.api.validation``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from trainjob.client import types


def _got(value: Any) -> str:
    text = repr(value)
    return f"{type(value).__name__} {text if len(text) <= 60 else text[:57] + '...'}"


def name(value: Any, argument: str = "name", what: str = "TrainJob") -> str:
    """A TrainJob or runtime name: a non-empty string without NUL or control characters."""
    if not isinstance(value, str):
        raise TypeError(f"{argument} must be a string (the {what}'s name), got {_got(value)}")
    if not value or any(ord(ch) < 32 or ord(ch) == 127 for ch in value):
        raise ValueError(
            f"{argument} must be a non-empty name without control characters, got {value!r}"
        )
    return value


def _optional_int(value: Any, argument: str, *, minimum: int = 1) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{argument} must be an integer, got {_got(value)}")
    if value < minimum:
        raise ValueError(f"{argument} must be at least {minimum}, got {value}")


def _string_list(value: Any, argument: str, *, empty_ok: bool = True) -> None:
    if value is None:
        return
    if isinstance(value, str | bytes) or not isinstance(value, Iterable):
        raise TypeError(
            f"{argument} must be a list of strings (for example [{value!r}]), got {_got(value)}"
            if isinstance(value, str)
            else f"{argument} must be a list of strings, got {_got(value)}"
        )
    items = list(value)
    bad = [v for v in items if not isinstance(v, str)]
    if bad:
        raise TypeError(f"{argument} must hold strings only, got {_got(bad[0])}")
    if not empty_ok and not items:
        raise ValueError(f"{argument} must name at least one entry")


def resources(value: Any, argument: str = "resources_per_node") -> None:
    """``{"cpu": 2, "memory": "4Gi", "gpu": 1}``: string names to numbers or quantity strings."""
    if value is None:
        return
    if not isinstance(value, Mapping):
        raise TypeError(
            f'{argument} must be a dict of resource names to amounts (for example {{"cpu": 2, '
            f'"memory": "4Gi"}}), got {_got(value)}'
        )
    for key, amount in value.items():
        if not isinstance(key, str) or not key:
            raise TypeError(f"{argument} keys must be resource names such as 'cpu', got {key!r}")
        if isinstance(amount, bool) or not isinstance(amount, int | float | str):
            raise TypeError(
                f"{argument}[{key!r}] must be a number or a quantity string such as '4Gi', got "
                f"{_got(amount)}"
            )
        if isinstance(amount, float) and not math.isfinite(amount):
            raise ValueError(f"{argument}[{key!r}] must be a finite number, got {amount}")


def env(value: Any, argument: str = "env") -> None:
    """``{"NAME": "value"}``: string names to strings (numbers are written as strings)."""
    if value is None:
        return
    if not isinstance(value, Mapping):
        raise TypeError(f"{argument} must be a dict of names to values, got {_got(value)}")
    for key, item in value.items():
        if not isinstance(key, str):
            raise TypeError(f"{argument} names must be strings, got {key!r}")
        if item is not None and (isinstance(item, bool) or not isinstance(item, str | int | float)):
            raise TypeError(f"{argument}[{key!r}] must be a string, got {_got(item)}")


def trainer(value: Any) -> None:
    """The fields of a CustomTrainer, CustomTrainerContainer or BuiltinTrainer."""
    if value is None:
        return
    if isinstance(value, types.CustomTrainer):
        if not callable(value.func):
            raise TypeError(f"CustomTrainer func must be a function, got {_got(value.func)}")
        if value.func_args is not None and not isinstance(value.func_args, Mapping):
            raise TypeError(
                f"CustomTrainer func_args must be a dict of argument names to values, got "
                f"{_got(value.func_args)}"
            )
        _optional_str(value.image, "CustomTrainer image")
        _string_list(value.packages_to_install, "CustomTrainer packages_to_install")
        for pkg in value.packages_to_install or ():
            if pkg.startswith("-"):
                raise ValueError(
                    f"CustomTrainer packages_to_install must be package names, not pip options: "
                    f"{pkg!r} (give package indexes with pip_index_urls)"
                )
        if value.packages_to_install:
            _string_list(value.pip_index_urls, "CustomTrainer pip_index_urls", empty_ok=False)
        else:
            _string_list(value.pip_index_urls, "CustomTrainer pip_index_urls")
    elif isinstance(value, types.CustomTrainerContainer):
        if not isinstance(value.image, str):
            raise TypeError(
                f"CustomTrainerContainer image must be a string, got {_got(value.image)}"
            )
    elif isinstance(value, types.BuiltinTrainer | types.ConfigTrainer):
        what = type(value).__name__
        config = value.config
        if isinstance(value, types.ConfigTrainer):
            _optional_int(value.num_nodes, f"{what} num_nodes", minimum=0)
            resources(value.resources_per_node, f"{what} resources_per_node")
            if value.image is not None and not isinstance(value.image, str):
                raise TypeError(f"{what} image must be a string, got {_got(value.image)}")
        if isinstance(config, types.TRLConfig):
            trl_config(config)
            return
        if not isinstance(config, types.TorchTuneConfig):
            raise TypeError(
                f"{what} config must be a TorchTuneConfig or TRLConfig, got {_got(config)}"
            )
        for fld in ("batch_size", "epochs"):
            _optional_int(getattr(config, fld), f"TorchTuneConfig {fld}")
        # 0 nodes leave the runtime's number, as upstream's ``if num_nodes:`` does
        _optional_int(config.num_nodes, "TorchTuneConfig num_nodes", minimum=0)
        if config.peft_config is not None and not isinstance(config.peft_config, types.LoraConfig):
            raise TypeError(
                f"TorchTuneConfig peft_config must be a LoraConfig, got {_got(config.peft_config)}"
            )
        resources(config.resources_per_node, "TorchTuneConfig resources_per_node")
        return
    else:
        raise TypeError(
            "trainer must be a CustomTrainer, CustomTrainerContainer, BuiltinTrainer or "
            f"ConfigTrainer, got {_got(value)}"
        )
    what = type(value).__name__
    if not isinstance(value.num_nodes, types.ElasticPolicy):  # checked where it is turned into YAML
        _optional_int(value.num_nodes, f"{what} num_nodes", minimum=0)  # 0: the runtime's number
    resources(value.resources_per_node, f"{what} resources_per_node")
    env(value.env, f"{what} env")


def _optional_str(value: Any, argument: str) -> None:
    if value is not None and not isinstance(value, str):
        raise TypeError(f"{argument} must be a string, got {_got(value)}")


def train(runtime: Any, initializer: Any, trainer_: Any, options: Any) -> None:
    """The arguments of ``TrainerClient.train``."""
    if runtime is not None and not isinstance(runtime, str | types.Runtime):
        raise TypeError(f"runtime must be a runtime name or a Runtime, got {_got(runtime)}")
    if initializer is not None and not isinstance(initializer, types.Initializer):
        raise TypeError(f"initializer must be an Initializer, got {_got(initializer)}")
    trainer(trainer_)
    if options is not None:
        if isinstance(options, str | bytes) or not isinstance(options, list | tuple):
            raise TypeError(
                f"options must be a list of options (Name, Labels...), got {_got(options)}"
            )
        for option in options:
            if not callable(option):
                raise TypeError(f"options must hold options such as Name('x'), got {_got(option)}")


def logs(name_: Any, step: Any, follow: Any) -> None:
    """The arguments of ``TrainerClient.get_job_logs``."""
    name(name_)
    if not isinstance(step, str):
        raise TypeError(f"step must be a step name such as 'node-0', got {_got(step)}")
    if follow is not None and not isinstance(follow, bool):
        raise TypeError(f"follow must be True or False, got {_got(follow)}")


def wait(name_: Any, status: Any, timeout: Any, polling_interval: Any, callbacks: Any) -> None:
    """The arguments of ``TrainerClient.wait_for_job_status`` (their values: client.status)."""
    name(name_)
    if isinstance(status, str) or not isinstance(status, set | frozenset | list | tuple):
        raise TypeError(
            f'status must be a set of statuses (for example {{"Complete"}}), got {_got(status)}'
        )
    for arg, value in (("timeout", timeout), ("polling_interval", polling_interval)):
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise TypeError(f"{arg} must be a number of seconds, got {_got(value)}")
    if timeout <= 0:
        raise ValueError(f"timeout must be greater than 0 seconds, got {timeout}")
    if callbacks is not None and (
        not isinstance(callbacks, list | tuple) or not all(callable(cb) for cb in callbacks)
    ):
        raise TypeError(f"callbacks must be a list of functions, got {_got(callbacks)}")


def runtime_filter(value: Any) -> None:
    if value is not None and not isinstance(value, types.Runtime):
        raise TypeError(
            f"runtime must be a Runtime (from get_runtime or list_runtimes), got {_got(value)}"
        )


def trl_config(config: types.TRLConfig) -> None:
    """The types of a TRLConfig's fields (what each renders as a ``trl`` flag)."""
    for fld in ("model_name_or_path", "dataset_name"):
        value = getattr(config, fld)
        if not isinstance(value, str) or not value:
            raise TypeError(f"TRLConfig {fld} must be a non-empty string, got {_got(value)}")
    for fld in ("per_device_train_batch_size", "num_train_epochs", "lora_r", "lora_alpha"):
        _optional_int(getattr(config, fld), f"TRLConfig {fld}")
    _optional_int(config.num_generations, "TRLConfig num_generations")
    _optional_int(config.max_prompt_length, "TRLConfig max_prompt_length")
    _optional_int(config.num_nodes, "TRLConfig num_nodes", minimum=0)
    for fld in ("learning_rate", "beta"):
        value = getattr(config, fld)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)):
            raise TypeError(f"TRLConfig {fld} must be a number, got {_got(value)}")
    for fld in ("bf16", "use_peft"):
        value = getattr(config, fld)
        if value is not None and not isinstance(value, bool):
            raise TypeError(f"TRLConfig {fld} must be True or False, got {_got(value)}")
    _string_list(config.lora_target_modules, "TRLConfig lora_target_modules")
    _string_list(config.reward_funcs, "TRLConfig reward_funcs")
    _string_list(config.extra_args, "TRLConfig extra_args")
    resources(config.resources_per_node, "TRLConfig resources_per_node")
