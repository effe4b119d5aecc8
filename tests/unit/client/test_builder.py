"""``train(...)`` arguments -> TrainJob: commands, quoting, torchtune args, initializers, options.

Expected values for the pip script and the torchtune overrides are upstream's (kubeflow/sdk
``backends/kubernetes/utils_test.py``); the function script differs on purpose: it is quoted, so
the shell expands nothing in the user's code or arguments.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.unit.client import shippable as s
from trainjob.client import builder, options, runtimes, types
from trainjob.client import constants as c
from trainjob.executor.catalog import builtin_runtimes

HOSTILE = ['"; rm -rf / #', "$(touch pwned)", "`touch pwned2`", "a'b", "x\ny", "${HOME}"]


def runtime(
    command: Any = runtimes.DEFAULT_COMMAND,
    trainer_type: types.TrainerType = types.TrainerType.CUSTOM_TRAINER,
    framework: str = "torch",
    name: str = "test-runtime",
    kind: types.RuntimeKind = types.RuntimeKind.CLUSTER_TRAINING_RUNTIME,
) -> types.Runtime:
    trainer = types.RuntimeTrainer(trainer_type=trainer_type, framework=framework, image="img")
    trainer.set_command(command)
    return types.Runtime(name=name, trainer=trainer, kind=kind)


TORCHTUNE = runtime(
    c.TORCH_TUNE_COMMAND, types.TrainerType.BUILTIN_TRAINER, "torchtune", "torchtune-llama3.2-1b"
)

PIP_SCRIPT = (
    '\nif ! [ -x "$(command -v pip)" ]; then\n'
    "    python -m ensurepip || python -m ensurepip --user || apt-get install python-pip\n"
    "fi\n\n\n"
    "PACKAGES=(torch numpy custom-package)\n"
    "PIP_OPTS=(--index-url https://pypi.org/simple --extra-index-url https://private.repo.com/simple)\n"
    'LOG_FILE="pip_install.log"\n'
    'rm -f "$LOG_FILE"\n'
    "\n"
    "if PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_BREAK_SYSTEM_PACKAGES=1 python -m pip install --quiet \\\n"
    '    --no-warn-script-location "${PIP_OPTS[@]}" --user "${PACKAGES[@]}" >"$LOG_FILE" 2>&1; then\n'
    '    echo "Successfully installed Python packages (user): ${PACKAGES[*]}"\n'
    "elif PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_BREAK_SYSTEM_PACKAGES=1 python -m pip install --quiet \\\n"
    '    --no-warn-script-location "${PIP_OPTS[@]}" "${PACKAGES[@]}" >>"$LOG_FILE" 2>&1; then\n'
    '    echo "Successfully installed Python packages (system-wide): ${PACKAGES[*]}"\n'
    "else\n"
    '    echo "ERROR: Failed to install Python packages: ${PACKAGES[*]}" >&2\n'
    '    cat "$LOG_FILE" >&2\n'
    "    exit 1\n"
    "fi\n\n"
)


def test_pip_script_is_upstreams_text() -> None:
    got = builder.pip_install_script(
        ["torch", "numpy", "custom-package"],
        ["https://pypi.org/simple", "https://private.repo.com/simple"],
    )
    assert got == PIP_SCRIPT


def _bash_array(script: str, var: str) -> list[str]:
    line = script[script.index(f"\n{var}=(") : script.index("\nLOG_FILE=")]  # both arrays
    out = subprocess.run(
        ["bash", "-c", f'{line}\nprintf "%s\\0" "${{{var}[@]}}"'],
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.split("\0")[:-1]


def test_hostile_package_names_and_index_urls_stay_single_words(tmp_path: Path) -> None:
    urls = ["https://x/simple; touch pwned", "$(touch pwned3)"]
    script = builder.pip_install_script(HOSTILE, urls)
    assert _bash_array(script, "PACKAGES") == HOSTILE
    assert _bash_array(script, "PIP_OPTS") == [
        "--index-url",
        urls[0],
        "--extra-index-url",
        urls[1],
    ]
    assert not list(tmp_path.iterdir())


def _run(command: list[str], cwd: Path | str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"])
    assert command[:2] == ["bash", "-c"]
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize(
    "hostile", HOSTILE, ids=[f"argument {h!r} reaches python unchanged" for h in HOSTILE]
)
def test_generated_command_runs_the_function_with_hostile_arguments_literally(
    tmp_path: Path, hostile: Any
) -> None:
    job = builder.build(
        runtime(), trainer=types.CustomTrainer(func=s.train_plain, func_args={"lr": hostile})
    )
    out = _run(job["spec"]["trainer"]["command"], tmp_path)
    assert out.returncode == 0, out.stderr
    assert f"lr {hostile} epochs 1" in out.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # nothing created in the cwd


def test_generated_command_never_overwrites_a_file_of_the_working_directory(tmp_path: Path) -> None:
    (tmp_path / "shippable.py").write_text("KEEP\n")
    job = builder.build(runtime(), trainer=types.CustomTrainer(func=s.train_no_args))
    out = _run(job["spec"]["trainer"]["command"], tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "hello"
    assert (tmp_path / "shippable.py").read_text() == "KEEP\n"


def test_pip_install_leaves_the_working_directory_alone(tmp_path: Path) -> None:
    (tmp_path / "pip_install.log").write_text("KEEP\n")
    job = builder.build(
        runtime(),
        trainer=types.CustomTrainer(
            func=s.train_no_args,
            packages_to_install=["no-such-package-zz"],
            pip_index_urls=[(tmp_path / "no-index").as_uri()],
        ),
    )
    command = job["spec"]["trainer"]["command"]
    assert 'LOG_FILE="$(mktemp 2>/dev/null || echo pip_install.log)"' in command[-1]
    out = _run(command, tmp_path)
    assert out.returncode == 1
    assert "ERROR: Failed to install Python packages: no-such-package-zz" in out.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pip_install.log"]
    assert (tmp_path / "pip_install.log").read_text() == "KEEP\n"


@pytest.mark.parametrize(
    ("command", "entrypoint", "prefix"),
    [
        pytest.param(
            runtimes.TORCH_COMMAND, "torchrun", ["bash", "-c"], id="torch runtimes run torchrun"
        ),
        pytest.param(
            runtimes.DEFAULT_COMMAND, "python", ["bash", "-c"], id="plain runtimes run python"
        ),
        pytest.param(
            runtimes.MPI_COMMAND,
            "python",
            ["mpirun", "--hostfile", "/etc/mpi/hostfile", "bash", "-c"],
            id="mpi runtimes run mpirun then python",
        ),
    ],
)
def test_entrypoint_follows_the_runtime(command: Any, entrypoint: Any, prefix: Any) -> None:
    job = builder.build(runtime(command), trainer=types.CustomTrainer(func=s.train_no_args))
    cmd = job["spec"]["trainer"]["command"]
    assert cmd[: len(prefix)] == prefix
    assert cmd[-1].splitlines()[-1] == f'{entrypoint} "$SCRIPT_DIR"/shippable.py'
    assert len(cmd) == len(prefix) + 1


def test_mpi_pip_log_goes_to_the_mpi_user_home() -> None:
    job = builder.build(
        runtime(runtimes.MPI_COMMAND),
        trainer=types.CustomTrainer(func=s.train_no_args, packages_to_install=["x"]),
    )
    assert 'LOG_FILE="/home/mpiuser/pip_install.log"' in job["spec"]["trainer"]["command"][-1]


def test_custom_trainer_fills_nodes_resources_image_and_env() -> None:
    job = builder.build(
        runtime(),
        trainer=types.CustomTrainer(
            func=s.train_no_args,
            num_nodes=2,
            resources_per_node={"CPU": 2, "gpu": 1, "memory": "4Gi"},
            env={"A": "1", "B": "two"},
            image="my/image:1",
        ),
    )
    trainer = job["spec"]["trainer"]
    assert trainer["numNodes"] == 2
    assert trainer["image"] == "my/image:1"
    want = {"cpu": 2, "nvidia.com/gpu": 1, "memory": "4Gi"}
    assert trainer["resourcesPerNode"] == {"limits": want, "requests": want}
    assert trainer["env"] == [{"name": "A", "value": "1"}, {"name": "B", "value": "two"}]


@pytest.mark.parametrize(
    "trainer",
    [
        pytest.param(types.CustomTrainer(func=s.train_no_args, num_nodes=0), id="CustomTrainer"),
        pytest.param(
            types.CustomTrainerContainer(image="my/image:1", num_nodes=0),
            id="CustomTrainerContainer",
        ),
    ],
)
def test_zero_num_nodes_leaves_the_runtimes_number(trainer: Any) -> None:
    # upstream's `if trainer.num_nodes:`: 0 sends no numNodes, so the runtime's mlPolicy decides
    job = builder.build(runtime(), trainer=trainer)
    assert "numNodes" not in job["spec"]["trainer"]


def test_zero_num_nodes_of_a_builtin_trainer_leaves_the_runtimes_number() -> None:
    job = builder.build(TORCHTUNE, trainer=types.BuiltinTrainer(types.TorchTuneConfig(num_nodes=0)))
    assert "numNodes" not in job["spec"]["trainer"]


@pytest.mark.parametrize(
    "name",
    [
        pytest.param("A=B", id="an env name with '=' is refused before submission"),
        pytest.param("A\nB", id="an env name with a newline is refused"),
        pytest.param("ÄÖ", id="a non-ASCII env name is refused"),
    ],
)
def test_env_names_kubernetes_would_refuse_are_refused_here(name: str) -> None:
    with pytest.raises(ValueError, match="printable ASCII characters other than '='"):
        builder.build(runtime(), trainer=types.CustomTrainer(func=s.train_no_args, env={name: "1"}))


def test_env_values_are_strings_and_none_is_empty() -> None:
    job = builder.build(
        runtime(),
        trainer=types.CustomTrainer(
            func=s.train_no_args,
            env={"N": 1, "E": None, "S": "$(id) `id`", "my.dotted-name": "x"},  # type: ignore[dict-item]
        ),
    )
    assert job["spec"]["trainer"]["env"] == [
        {"name": "N", "value": "1"},
        {"name": "E", "value": ""},
        {"name": "S", "value": "$(id) `id`"},
        {"name": "my.dotted-name", "value": "x"},
    ]


def test_backend_env_goes_first_and_the_trainers_env_wins() -> None:
    job = builder.build(
        runtime(),
        trainer=types.CustomTrainer(func=s.train_no_args, env={"A": "mine"}),
        extra_env={"A": "base", "Z": "z"},
    )
    assert job["spec"]["trainer"]["env"] == [
        {"name": "Z", "value": "z"},
        {"name": "A", "value": "mine"},
    ]


@pytest.mark.parametrize(
    ("resources", "want"),
    [
        pytest.param(
            {"MiG-1G.5GB": 2, "cpu": "500m"},
            {"cpu": "500m", "nvidia.com/mig-1g.5gb": 2},
            id="mig alias expands to the full key",
        ),
        pytest.param(
            {"example.com/Capitalized": 1, "CPU": 2, "STORAGE": "100Gi"},
            {"example.com/Capitalized": 1, "cpu": 2, "ephemeral-storage": "100Gi"},
            id="extended resources keep their case and storage is ephemeral-storage",
        ),
    ],
)
def test_resources_per_node_as_upstream(resources: Any, want: Any) -> None:
    assert runtimes.resources_per_node(resources) == {"limits": want, "requests": want}


@pytest.mark.parametrize(
    "resources",
    [
        pytest.param({"gpu": 1, "mig-1g.5gb": 1}, id="gpu and mig together are refused"),
        pytest.param(
            {"mig-1g.5gb": 1, "nvidia.com/mig-2g.10gb": 1}, id="two mig types are refused"
        ),
        pytest.param({"cpu": [1]}, id="a list is not a quantity"),
    ],
)
def test_invalid_resources_are_refused(resources: Any) -> None:
    with pytest.raises(ValueError):
        runtimes.resources_per_node(resources)


# -- BuiltinTrainer ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("config", "initializer", "want"),
    [
        pytest.param(types.TorchTuneConfig(), None, [], id="empty config produces no args"),
        pytest.param(
            types.TorchTuneConfig(dtype=types.DataType.BF16),
            None,
            ["dtype=bf16"],
            id="dtype renders its value",
        ),
        pytest.param(
            types.TorchTuneConfig(
                dtype=types.DataType.FP32,
                batch_size=8,
                epochs=3,
                loss=types.Loss.CEWithChunkedOutputLoss,
            ),
            None,
            [
                "dtype=fp32",
                "batch_size=8",
                "epochs=3",
                "loss=torchtune.modules.loss.CEWithChunkedOutputLoss",
            ],
            id="all scalar fields produce args",
        ),
        pytest.param(
            types.TorchTuneConfig(peft_config=types.LoraConfig(lora_rank=32, lora_alpha=16)),
            None,
            [
                "model.lora_rank=32",
                "model.lora_alpha=16",
                "model.lora_attn_modules=[q_proj,v_proj,output_proj]",
            ],
            id="lora args follow",
        ),
        pytest.param(
            types.TorchTuneConfig(
                peft_config=types.LoraConfig(lora_dropout=0.0, apply_lora_to_mlp=False)
            ),
            None,
            [
                "model.apply_lora_to_mlp=False",
                "model.lora_dropout=0.0",
                "model.lora_attn_modules=[q_proj,v_proj,output_proj]",
            ],
            id="falsy lora values are not dropped",
        ),
        pytest.param(
            types.TorchTuneConfig(peft_config=types.LoraConfig(quantize_base=True, use_dora=True)),
            None,
            [
                "model.quantize_base=True",
                "model.use_dora=True",
                "model.lora_attn_modules=[q_proj,v_proj,output_proj]",
            ],
            id="qlora and dora flags",
        ),
        pytest.param(
            types.TorchTuneConfig(
                dataset_preprocess_config=types.TorchTuneInstructDataset(
                    source=types.DataFormat.PARQUET,
                    split="train[:10%]",
                    train_on_input=False,
                    new_system_prompt="Be brief",
                    column_map={"input": "q", "output": "a"},
                )
            ),
            None,
            [
                "dataset=torchtune.datasets.instruct_dataset",
                "dataset.source=parquet",
                "dataset.split=train[:10%]",
                "dataset.train_on_input=False",
                "dataset.new_system_prompt=Be brief",
                "dataset.column_map={'input': 'q', 'output': 'a'}",
            ],
            id="instruct dataset args",
        ),
        pytest.param(
            types.TorchTuneConfig(dtype=types.DataType.BF16),
            types.Initializer(
                dataset=types.HuggingFaceDatasetInitializer(storage_uri="hf://tatsu-lab/alpaca")
            ),
            ["dtype=bf16", "dataset.data_dir=/workspace/dataset/."],
            id="a dataset repo is a data_dir",
        ),
        pytest.param(
            types.TorchTuneConfig(),
            types.Initializer(
                dataset=types.HuggingFaceDatasetInitializer(
                    storage_uri="hf://tatsu-lab/alpaca/data.json"
                )
            ),
            ["dataset.data_files=/workspace/dataset/data.json"],
            id="a dataset file is data_files",
        ),
    ],
)
def test_torchtune_args_as_upstream(config: Any, initializer: Any, want: Any) -> None:
    assert builder.torchtune_args(config, initializer) == want


def test_builtin_trainer_uses_the_runtime_command_and_nodes() -> None:
    job = builder.build(
        TORCHTUNE,
        trainer=types.BuiltinTrainer(
            types.TorchTuneConfig(num_nodes=2, batch_size=8, resources_per_node={"gpu": 2})
        ),
    )
    trainer = job["spec"]["trainer"]
    assert trainer["command"] == ["tune", "run"]
    assert trainer["args"] == ["batch_size=8"]
    assert trainer["numNodes"] == 2
    assert trainer["resourcesPerNode"]["limits"] == {"nvidia.com/gpu": 2}


@pytest.mark.parametrize(
    ("rt", "trainer", "fragment"),
    [
        pytest.param(
            TORCHTUNE,
            types.CustomTrainer(func=s.train_no_args),
            "CustomTrainer can't be used",
            id="a CustomTrainer on a torchtune runtime is refused",
        ),
        pytest.param(
            runtime(),
            types.BuiltinTrainer(types.TorchTuneConfig()),
            "BuiltinTrainer can't be used",
            id="a BuiltinTrainer on a torch runtime is refused",
        ),
        pytest.param(
            TORCHTUNE,
            types.BuiltinTrainer(types.TorchTuneConfig(dtype="fp64")),  # type: ignore[arg-type]
            "Invalid dtype",
            id="an unknown dtype is refused",
        ),
        pytest.param(
            runtime(),
            types.CustomTrainer(func=s.train_no_args, num_nodes=-1),
            "num_nodes",
            id="negative num_nodes is refused",
        ),
        pytest.param(
            TORCHTUNE,
            types.BuiltinTrainer(types.TorchTuneConfig(epochs=0)),
            "epochs must be a positive integer, got 0",
            id="zero epochs is refused, not dropped",
        ),
        pytest.param(
            runtime(), "trainer", "is not supported", id="an unknown trainer type is refused"
        ),
    ],
)
def test_trainer_and_runtime_mismatches_are_refused(
    rt: types.Runtime, trainer: Any, fragment: str
) -> None:
    with pytest.raises(ValueError, match=re.escape(fragment)):
        builder.build(rt, trainer=trainer)


# -- initializers ------------------------------------------------------------------------------


def test_initializers_become_spec_initializer_with_upper_cased_env() -> None:
    job = builder.build(
        runtime(),
        initializer=types.Initializer(
            dataset=types.S3DatasetInitializer(
                storage_uri="s3://b/d",
                endpoint="http://minio:9000",
                access_key_id="k",
                secret_access_key="s",
            ),
            model=types.HuggingFaceModelInitializer(
                storage_uri="hf://org/model", access_token="hf_x"
            ),
        ),
    )
    assert job["spec"]["initializer"] == {
        "dataset": {
            "storageUri": "s3://b/d",
            "env": [
                {"name": "ENDPOINT", "value": "http://minio:9000"},
                {"name": "ACCESS_KEY_ID", "value": "k"},
                {"name": "SECRET_ACCESS_KEY", "value": "s"},
            ],
        },
        "model": {
            "storageUri": "hf://org/model",
            "env": [
                {"name": "IGNORE_PATTERNS", "value": "*.msgpack,*.h5,*.bin,*.pt,*.pth"},
                {"name": "ACCESS_TOKEN", "value": "hf_x"},
            ],
        },
    }
    assert "trainer" not in job["spec"]


def test_data_cache_initializer_env() -> None:
    got = builder.dataset_initializer(
        types.DataCacheInitializer(
            storage_uri="cache://schema/table",
            metadata_loc="s3://b/m.json",
            num_data_nodes=2,
            head_cpu="1",
        )
    )
    assert got["env"] == [
        {"name": "CLUSTER_SIZE", "value": "3"},
        {"name": "METADATA_LOC", "value": "s3://b/m.json"},
        {"name": "HEAD_CPU", "value": "1"},
    ]


def test_an_hf_dataset_with_no_user_is_accepted_as_upstream() -> None:
    job = builder.build(
        runtime(),
        initializer=types.Initializer(
            dataset=types.HuggingFaceDatasetInitializer(storage_uri="hf://squad")
        ),
    )
    assert job["spec"]["initializer"]["dataset"]["storageUri"] == "hf://squad"


@pytest.mark.parametrize(
    ("make", "fragment"),
    [
        pytest.param(
            lambda: types.HuggingFaceDatasetInitializer(storage_uri="gs://x/y"),
            "storage_uri must start with 'hf://', 's3://' or 'file://'",
            id="hf dataset needs a scheme the initializers fetch",
        ),
        pytest.param(
            lambda: types.HuggingFaceModelInitializer(storage_uri="file://relative/model"),
            "must be an absolute local path, 'file:///<path>'",
            id="file:// needs an absolute path",
        ),
        pytest.param(
            lambda: types.S3DatasetInitializer(storage_uri="s3:///no-bucket"),
            "must name a bucket",
            id="s3:// needs a bucket",
        ),
        pytest.param(
            lambda: types.HuggingFaceDatasetInitializer(storage_uri="hf://"),
            "storage_uri must name a dataset",
            id="hf dataset needs a name",
        ),
        pytest.param(
            lambda: types.S3ModelInitializer(storage_uri="https://x/model"),
            "storage_uri must start with 'hf://', 's3://' or 'file://'",
            id="s3 model needs a scheme the initializers fetch",
        ),
        pytest.param(
            lambda: types.DataCacheInitializer(
                storage_uri="cache://a/b", metadata_loc="m", num_data_nodes=1
            ),
            "num_data_nodes must be greater than 1",
            id="data cache needs two nodes",
        ),
        pytest.param(
            lambda: types.DataCacheInitializer(
                storage_uri="cache://a", metadata_loc="m", num_data_nodes=2
            ),
            "cache://<SCHEMA_NAME>/<TABLE_NAME>",
            id="data cache needs schema and table",
        ),
    ],
)
def test_initializer_uris_are_validated_as_upstream(
    make: Callable[[], object], fragment: str
) -> None:
    with pytest.raises(ValueError, match=re.escape(fragment)):
        make()


# -- the TrainJob and options --------------------------------------------------------------------


def test_generated_names_are_twelve_characters_starting_with_a_letter() -> None:
    names = {builder.generate_name() for _ in range(50)}
    assert len(names) == 50
    assert all(re.fullmatch(r"[a-z][0-9a-f]{11}", n) for n in names)


def test_trainjob_shape_without_trainer_is_just_the_runtime_ref() -> None:
    job = builder.build(runtime(name="torch-distributed"), options=[options.Name("my-job")])
    assert job == {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": "my-job"},
        "spec": {"runtimeRef": {"name": "torch-distributed"}},
    }


def test_a_namespaced_runtime_is_referenced_by_kind() -> None:
    job = builder.build(runtime(kind=types.RuntimeKind.TRAINING_RUNTIME), namespace="team")
    assert job["spec"]["runtimeRef"] == {
        "name": "test-runtime",
        "apiGroup": "trainer.kubeflow.org",
        "kind": "TrainingRuntime",
    }
    assert job["metadata"]["namespace"] == "team"


def test_options_edit_the_trainjob() -> None:
    patch = options.RuntimePatch(
        training_runtime_spec=options.TrainingRuntimeSpecPatch(
            template=options.JobSetTemplatePatch(
                spec=options.JobSetSpecPatch(
                    replicated_jobs=[
                        options.ReplicatedJobPatch(
                            name="node",
                            template=options.JobTemplatePatch(
                                spec=options.JobSpecPatch(
                                    template=options.PodTemplatePatch(
                                        spec=options.PodSpecPatch(
                                            node_selector={"gpu": "a100"},
                                            containers=[
                                                options.ContainerPatch(
                                                    name="node", env=[{"name": "X", "value": "1"}]
                                                )
                                            ],
                                        )
                                    )
                                )
                            ),
                        )
                    ]
                )
            )
        )
    )
    job = builder.build(
        runtime(),
        trainer=types.CustomTrainerContainer(image="img:1"),
        options=[
            options.Name("custom"),
            options.Labels({"team": "a"}),
            options.Annotations({"note": "b"}),
            options.TrainerCommand(["python", "train.py"]),
            options.TrainerArgs(["--lr", "0.1"]),
            options.TrainerEnvFrom.secret("TOKEN", secret_name="s", key="k"),
            options.ActiveDeadlineSeconds(3600),
            patch,
        ],
    )
    assert job["metadata"] == {
        "name": "custom",
        "labels": {"team": "a"},
        "annotations": {"note": "b"},
    }
    spec = job["spec"]
    assert spec["trainer"]["command"] == ["python", "train.py"]
    assert spec["trainer"]["args"] == ["--lr", "0.1"]
    assert spec["trainer"]["env"] == [
        {"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}
    ]
    assert spec["activeDeadlineSeconds"] == 3600
    assert spec["runtimePatches"] == [
        {
            "manager": "trainer.kubeflow.org/kubeflow-sdk",
            "trainingRuntimeSpec": {
                "template": {
                    "spec": {
                        "replicatedJobs": [
                            {
                                "name": "node",
                                "template": {
                                    "spec": {
                                        "template": {
                                            "spec": {
                                                "containers": [
                                                    {
                                                        "name": "node",
                                                        "env": [{"name": "X", "value": "1"}],
                                                    }
                                                ],
                                                "nodeSelector": {"gpu": "a100"},
                                            }
                                        }
                                    }
                                },
                            }
                        ]
                    }
                }
            },
        }
    ]


@pytest.mark.parametrize(
    ("make", "fragment"),
    [
        pytest.param(
            lambda: options.Name("Bad_Name"), "RFC 1035", id="a name that is not a DNS label"
        ),
        pytest.param(lambda: options.Name("a" * 64), "no more than 63", id="a name longer than 63"),
        pytest.param(
            lambda: options.ActiveDeadlineSeconds(0), "positive integer", id="a zero deadline"
        ),
        pytest.param(
            lambda: options.ContainerPatch(name=""),
            "non-empty",
            id="a container patch without name",
        ),
        pytest.param(
            lambda: options.ContainerPatch(
                name="n", volume_mounts=[{"name": "v", "mountPath": "rel"}]
            ),
            "absolute path",
            id="a relative mount path",
        ),
    ],
)
def test_invalid_options_are_refused(make: Callable[[], object], fragment: str) -> None:
    with pytest.raises(ValueError, match=re.escape(fragment)):
        make()


def test_trainer_command_is_refused_with_a_custom_trainer() -> None:
    with pytest.raises(
        ValueError, match="TrainerCommand can only be used with CustomTrainerContainer"
    ):
        builder.build(
            runtime(),
            trainer=types.CustomTrainer(func=s.train_no_args),
            options=[options.TrainerCommand(["x"])],
        )


def test_an_invalid_trainjob_is_refused_with_field_paths_before_submission() -> None:
    def bad_name(job_spec: dict[str, Any], trainer: Any, backend: Any) -> None:
        job_spec["metadata"]["name"] = "Not_A_Label"

    with pytest.raises(ValueError, match=re.escape('metadata.name: Invalid value: "Not_A_Label"')):
        builder.build(runtime(), options=[bad_name])


# -- runtimes ---------------------------------------------------------------------------------


def test_builtin_torch_runtime_maps_to_a_custom_trainer_runtime_with_torchrun() -> None:
    rt = runtimes.runtime_from_cr(builtin_runtimes()["torch-distributed"].to_dict())
    assert rt.name == "torch-distributed"
    assert rt.trainer.trainer_type == types.TrainerType.CUSTOM_TRAINER
    assert rt.trainer.framework == "torch"
    assert rt.trainer.num_nodes == 1
    assert rt.trainer.command == runtimes.TORCH_COMMAND


def test_runtime_devices_multiply_by_nodes_and_mpi_overrides_the_count() -> None:
    cr = {
        "kind": "ClusterTrainingRuntime",
        "metadata": {"name": "mpi", "labels": {c.RUNTIME_FRAMEWORK_LABEL: "mpi"}},
        "spec": {
            "mlPolicy": {"numNodes": 2, "mpi": {"numProcPerNode": 2}},
            "template": {
                "spec": {
                    "replicatedJobs": [
                        {
                            "name": "node",
                            "template": {
                                "metadata": {"labels": {c.TRAINJOB_ANCESTOR_LABEL: "trainer"}},
                                "spec": {
                                    "template": {
                                        "spec": {
                                            "containers": [
                                                {
                                                    "name": "node",
                                                    "image": "mpi:1",
                                                    "resources": {"limits": {"nvidia.com/gpu": 1}},
                                                }
                                            ]
                                        }
                                    }
                                },
                            },
                        }
                    ]
                }
            },
        },
    }
    rt = runtimes.runtime_from_cr(cr)
    assert (rt.trainer.device, rt.trainer.device_count, rt.trainer.num_nodes) == ("gpu", "4", 2)
    assert rt.trainer.command[0] == "mpirun"


def test_a_runtime_without_framework_label_is_refused() -> None:
    cr = builtin_runtimes()["torch-distributed"].to_dict()
    del cr["metadata"]["labels"]
    with pytest.raises(
        ValueError, match=re.escape("must have trainer.kubeflow.org/framework label")
    ):
        runtimes.runtime_from_cr(cr)


@pytest.mark.parametrize("name", sorted(builtin_runtimes()))
def test_every_builtin_runtime_compiles_the_trainjob_the_sdk_builds_for_it(name: str) -> None:
    from trainjob.runtime import compile

    cr = builtin_runtimes()[name]
    rt = runtimes.runtime_from_cr(cr.to_dict())
    init = None
    if rt.trainer.framework == "trl":
        trainer: Any = types.BuiltinTrainer(
            types.TRLConfig(
                method=types.TRLMethod.DPO,
                model_name_or_path="Qwen/Qwen2.5-0.5B",
                dataset_name="trl-lib/ultrafeedback_binarized",
                beta=0.1,
                num_nodes=2,
                use_peft=True,
            )
        )
        init = types.Initializer(
            dataset=types.HuggingFaceDatasetInitializer(
                storage_uri="hf://trl-lib/ultrafeedback_binarized"
            ),
            model=types.HuggingFaceModelInitializer(storage_uri="hf://Qwen/Qwen2.5-0.5B"),
        )
    elif rt.trainer.trainer_type == types.TrainerType.BUILTIN_TRAINER:
        trainer = types.BuiltinTrainer(
            types.TorchTuneConfig(
                num_nodes=1,
                batch_size=2,
                dtype=types.DataType.BF16,
                peft_config=types.LoraConfig(lora_rank=4),
                dataset_preprocess_config=types.TorchTuneInstructDataset(
                    source=types.DataFormat.JSON
                ),
            )
        )
        init = types.Initializer(
            dataset=types.HuggingFaceDatasetInitializer(
                storage_uri="hf://tatsu-lab/alpaca/data.json"
            ),
            model=types.HuggingFaceModelInitializer(
                storage_uri="hf://meta-llama/Llama-3.2-1B-Instruct"
            ),
        )
    else:
        trainer = types.CustomTrainer(
            func=s.train_plain, num_nodes=2, resources_per_node={"cpu": 1}
        )
    job = builder.build(rt, init, trainer, namespace="default")
    plan = compile(builder.model(job), cr)
    assert plan.objects


def test_a_trainjob_template_unpacks_into_train_arguments() -> None:
    template = types.TrainJobTemplate(
        trainer=types.CustomTrainer(func=s.train_no_args), runtime="torch"
    )
    assert {**template} == {"trainer": template.trainer, "runtime": "torch", "initializer": None}


@pytest.mark.parametrize(
    ("kind", "init"),
    [
        pytest.param(
            "model",
            types.HuggingFaceModelInitializer(storage_uri="file:///tmp/demo/model"),
            id="a local copy of an HF model",
        ),
        pytest.param(
            "dataset",
            types.HuggingFaceDatasetInitializer(storage_uri="s3://bucket/alpaca"),
            id="an HF dataset from S3",
        ),
        pytest.param(
            "model",
            types.S3ModelInitializer(storage_uri="hf://meta-llama/Llama-3.2-1B"),
            id="an S3 model type with hf://",
        ),
        pytest.param(
            "model", types.HuggingFaceModelInitializer(storage_uri="hf://gpt2"), id="hf://gpt2"
        ),
    ],
)
def test_every_initializer_type_takes_every_scheme_the_initializers_fetch(
    kind: str, init: Any
) -> None:
    spec = builder.initializer_spec(types.Initializer(**{kind: init}))
    assert spec is not None
    assert spec[kind]["storageUri"] == init.storage_uri


def test_a_local_dataset_copy_is_read_where_the_initializer_wrote_it() -> None:
    """file:// (or s3://) data: no dataset.data_dir override, so the trainer reads
    /workspace/dataset, as for S3; hf:// keeps upstream's data_dir from the repo path."""
    config = types.TorchTuneConfig(epochs=1)
    local = types.Initializer(
        dataset=types.HuggingFaceDatasetInitializer(storage_uri="file:///tmp/demo/dataset")
    )
    assert builder.torchtune_args(config, local) == ["epochs=1"]
    hub = types.Initializer(
        dataset=types.HuggingFaceDatasetInitializer(storage_uri="hf://tatsu-lab/alpaca/data")
    )
    assert builder.torchtune_args(config, hub) == [
        "epochs=1",
        "dataset.data_dir=/workspace/dataset/data",
    ]


def test_trainjob_s_fine_tune_knobs_become_torchtune_config_keys() -> None:
    config = types.TorchTuneConfig(
        epochs=2,
        learning_rate=1e-4,
        gradient_accumulation_steps=4,
        max_steps_per_epoch=10,
        max_seq_len=256,
        warmup_steps=0,
        overrides=["dataset.packed=True", "save_every_n_steps=5"],
    )
    assert builder.torchtune_args(config) == [
        "epochs=2",
        "optimizer.lr=0.0001",
        "gradient_accumulation_steps=4",
        "max_steps_per_epoch=10",
        "tokenizer.max_seq_len=256",
        "lr_scheduler.num_warmup_steps=0",
        "dataset.packed=True",
        "save_every_n_steps=5",
    ]


@pytest.mark.parametrize(
    ("config", "message"),
    [
        (types.TorchTuneConfig(learning_rate=0), "learning_rate must be a number > 0, got 0"),
        (types.TorchTuneConfig(max_seq_len=0), "max_seq_len must be a positive integer, got 0"),
        (types.TorchTuneConfig(warmup_steps=-1), "warmup_steps must be an integer >= 0, got -1"),
        (types.TorchTuneConfig(overrides=["packed"]), "overrides must be key=value strings"),
    ],
)
def test_a_bad_knob_is_a_value_error_naming_it(config: types.TorchTuneConfig, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        builder.torchtune_args(config)


def test_ttl_seconds_after_finished_sets_the_spec_field_and_refuses_a_bad_value() -> None:
    job = builder.build(runtime(), options=[options.TTLSecondsAfterFinished(3600)])
    assert job["spec"]["ttlSecondsAfterFinished"] == 3600
    assert (
        builder.build(runtime(), options=[options.TTLSecondsAfterFinished(0)])["spec"][
            "ttlSecondsAfterFinished"
        ]
        == 0
    )
    for bad in (-1, 2**31, 1.5, True):
        with pytest.raises(ValueError, match="ttlSecondsAfterFinished must be an integer"):
            options.TTLSecondsAfterFinished(bad)  # type: ignore[arg-type]
