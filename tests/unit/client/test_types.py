"""The SDK's public types and TrainerClient's methods match upstream ``kubeflow.trainer`` field by
field: names, order (positional arguments mean the same) and defaults.

The expected values were read from the released ``kubeflow`` 0.5.0 package (``dataclasses.fields``
and ``inspect.signature`` of its ``kubeflow.trainer`` exports); ``REQ`` is a required field.
"""

from __future__ import annotations

import dataclasses
import inspect

import pytest

import trainjob
from trainjob.client import types

REQ = "REQ"
IGNORE = ["*.msgpack", "*.h5", "*.bin", "*.pt", "*.pth"]
S3 = [("endpoint", None), ("access_key_id", None), ("secret_access_key", None)]
S3 += [("region", None), ("role_arn", None)]

UPSTREAM_FIELDS: dict[str, list[tuple[str, object]]] = {
    "CustomTrainer": [
        ("func", REQ),
        ("func_args", None),
        ("image", None),
        ("packages_to_install", None),
        ("pip_index_urls", ["https://pypi.org/simple"]),
        ("num_nodes", None),
        ("resources_per_node", None),
        ("env", None),
    ],
    "CustomTrainerContainer": [
        ("image", REQ),
        ("num_nodes", None),
        ("resources_per_node", None),
        ("env", None),
    ],
    "BuiltinTrainer": [("config", REQ)],
    "TorchTuneConfig": [
        ("dtype", None),
        ("batch_size", None),
        ("epochs", None),
        ("loss", None),
        ("num_nodes", None),
        ("peft_config", None),
        ("dataset_preprocess_config", None),
        ("resources_per_node", None),
    ],
    "LoraConfig": [
        ("apply_lora_to_mlp", None),
        ("apply_lora_to_output", None),
        ("lora_attn_modules", ["q_proj", "v_proj", "output_proj"]),
        ("lora_rank", None),
        ("lora_alpha", None),
        ("lora_dropout", None),
        ("quantize_base", None),
        ("use_dora", None),
    ],
    "TorchTuneInstructDataset": [
        ("source", None),
        ("split", None),
        ("train_on_input", None),
        ("new_system_prompt", None),
        ("column_map", None),
    ],
    "Initializer": [("dataset", None), ("model", None)],
    "HuggingFaceDatasetInitializer": [
        ("storage_uri", REQ),
        ("ignore_patterns", None),
        ("access_token", None),
    ],
    "HuggingFaceModelInitializer": [
        ("storage_uri", REQ),
        ("ignore_patterns", IGNORE),
        ("access_token", None),
    ],
    "S3DatasetInitializer": [("storage_uri", REQ), ("ignore_patterns", None), *S3],
    "S3ModelInitializer": [("storage_uri", REQ), ("ignore_patterns", IGNORE), *S3],
    "DataCacheInitializer": [
        ("storage_uri", REQ),
        ("metadata_loc", REQ),
        ("num_data_nodes", REQ),
        ("head_cpu", None),
        ("head_mem", None),
        ("worker_cpu", None),
        ("worker_mem", None),
        ("iam_role", None),
    ],
    "RuntimeTrainer": [
        ("trainer_type", REQ),
        ("framework", REQ),
        ("image", REQ),
        ("num_nodes", 1),
        ("device", "Unknown"),
        ("device_count", "Unknown"),
    ],
    # upstream 0.5 requires kind; ours defaults it (older SDKs had no kind) in the same place
    "Runtime": [
        ("name", REQ),
        ("trainer", REQ),
        ("kind", types.RuntimeKind.CLUSTER_TRAINING_RUNTIME),
        ("pretrained_model", None),
    ],
    "Step": [
        ("name", REQ),
        ("status", REQ),
        ("pod_name", REQ),
        ("device", "Unknown"),
        ("device_count", "Unknown"),
    ],
    "TrainJob": [
        ("name", REQ),
        ("runtime", REQ),
        ("steps", REQ),
        ("num_nodes", REQ),
        ("creation_timestamp", REQ),
        ("status", "Unknown"),
    ],
    "Event": [
        ("involved_object_kind", REQ),
        ("involved_object_name", REQ),
        ("message", REQ),
        ("reason", REQ),
        ("event_time", REQ),
    ],
    "TrainJobTemplate": [("trainer", REQ), ("runtime", None), ("initializer", None)],
}


def _fields(cls: type) -> list[tuple[str, object]]:
    out: list[tuple[str, object]] = []
    for f in dataclasses.fields(cls):
        if not f.init:
            continue
        if f.default is not dataclasses.MISSING:
            out.append((f.name, f.default))
        elif f.default_factory is not dataclasses.MISSING:
            out.append((f.name, f.default_factory()))
        else:
            out.append((f.name, REQ))
    return out


TRAINJOB_FIELDS: dict[str, list[tuple[str, object]]] = {
    # trainjob's fine-tune knobs, after upstream's fields and optional (docs/fine-tuning.md)
    "TorchTuneConfig": [
        ("learning_rate", None),
        ("gradient_accumulation_steps", None),
        ("max_steps_per_epoch", None),
        ("max_seq_len", None),
        ("warmup_steps", None),
        ("overrides", None),
    ],
    # where a job's outputs are kept (get_job fills it; docs/lifecycle.md), then what the
    # training last reported (status.trainerStatus, KEP-2779; docs/progress.md)
    "TrainJob": [("outputs", {}), ("trainer_status", None)],
}


@pytest.mark.parametrize("name", sorted(UPSTREAM_FIELDS))
def test_fields_order_and_defaults_are_upstreams(name: str) -> None:
    """Upstream's fields first, in its order, with its defaults; trainjob's only after them."""
    cls = getattr(trainjob, name, None) or getattr(types, name)
    assert _fields(cls) == UPSTREAM_FIELDS[name] + TRAINJOB_FIELDS.get(name, [])


def test_positional_arguments_mean_what_they_mean_upstream() -> None:
    def fn() -> None:
        pass

    trainer = types.CustomTrainer(fn, {"a": 1}, "my/image:1", ["numpy"])
    assert (trainer.image, trainer.packages_to_install) == ("my/image:1", ["numpy"])
    rt = types.Runtime(
        "r",
        types.RuntimeTrainer(types.TrainerType.CUSTOM_TRAINER, "torch", "img"),
        types.RuntimeKind.TRAINING_RUNTIME,
    )
    assert (rt.kind, rt.pretrained_model) == (types.RuntimeKind.TRAINING_RUNTIME, None)


UPSTREAM_METHODS: dict[str, list[tuple[str, object]]] = {
    "list_runtimes": [],
    "get_runtime": [("name", REQ)],
    "get_runtime_packages": [("runtime", REQ)],
    "train": [("runtime", None), ("initializer", None), ("trainer", None), ("options", None)],
    "list_jobs": [("runtime", None)],
    "get_job": [("name", REQ)],
    "get_job_logs": [("name", REQ), ("step", "node-0"), ("follow", False)],
    "get_job_events": [("name", REQ)],
    "wait_for_job_status": [
        ("name", REQ),
        ("status", {"Complete"}),
        ("timeout", 600),
        ("polling_interval", 2),
        ("callbacks", None),
    ],
    "delete_job": [("name", REQ)],
}


@pytest.mark.parametrize("method", sorted(UPSTREAM_METHODS))
def test_trainer_client_methods_take_upstreams_parameters_first(method: str) -> None:
    params = list(inspect.signature(getattr(trainjob.TrainerClient, method)).parameters.values())
    got = [(p.name, REQ if p.default is inspect.Parameter.empty else p.default) for p in params]
    want = UPSTREAM_METHODS[method]
    assert got[0][0] == "self"
    assert got[1 : len(want) + 1] == want
    # anything we add comes after upstream's parameters and has a default
    assert all(default is not REQ for _, default in got[len(want) + 1 :])


@pytest.mark.parametrize(
    ("enum", "members"),
    [
        ("TrainerType", {"CUSTOM_TRAINER": "CustomTrainer", "BUILTIN_TRAINER": "BuiltinTrainer"}),
        (
            "RuntimeKind",
            {
                "CLUSTER_TRAINING_RUNTIME": "ClusterTrainingRuntime",
                "TRAINING_RUNTIME": "TrainingRuntime",
            },
        ),
        ("DataType", {"BF16": "bf16", "FP32": "fp32"}),
        (
            "DataFormat",
            {
                "JSON": "json",
                "CSV": "csv",
                "PARQUET": "parquet",
                "ARROW": "arrow",
                "TEXT": "text",
                "XML": "xml",
            },
        ),
        ("Loss", {"CEWithChunkedOutputLoss": "torchtune.modules.loss.CEWithChunkedOutputLoss"}),
    ],
)
def test_enums_are_upstreams(enum: str, members: dict[str, str]) -> None:
    assert {m.name: m.value for m in getattr(trainjob, enum)} == members


def test_paths_are_upstreams() -> None:
    assert (trainjob.DATASET_PATH, trainjob.MODEL_PATH) == (
        "/workspace/dataset",
        "/workspace/model",
    )
