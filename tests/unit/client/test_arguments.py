"""SDK arguments of the wrong type or value end in one clear TypeError / ValueError naming the
argument, before anything is submitted (issue 11, class 4), with these exact messages.

The calls are the red team's (``tests/redteam/inputs.py``: ``SDK_CALLS``), each against a fresh
local store; nothing may be stored. A hypothesis test then throws arbitrary values at every
``train()`` argument: the answer is a job or one of those errors, never another exception.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.redteam import inputs
from tests.redteam.cases import stored_jobs
from trainjob import (
    BuiltinTrainer,
    CustomTrainer,
    CustomTrainerContainer,
    Initializer,
    TorchTuneConfig,
    TrainerClient,
)
from trainjob.api.trainer import Runtime, TrainJob
from trainjob.client.config import LocalProcessBackendConfig
from trainjob.local import LocalExecutor
from trainjob.local.client import limits

EXPECTED: dict[str, tuple[str, str]] = {
    "resources-per-node-is-a-string": (
        "TypeError",
        'CustomTrainer resources_per_node must be a dict of resource names to amounts (for example {"cpu": 2, "memory": "4Gi"}), got str \'cpu=2\'',
    ),
    "resources-per-node-is-a-list": (
        "TypeError",
        'CustomTrainer resources_per_node must be a dict of resource names to amounts (for example {"cpu": 2, "memory": "4Gi"}), got list [\'cpu\', 2]',
    ),
    "resources-per-node-value-is-a-list": (
        "TypeError",
        "CustomTrainer resources_per_node['cpu'] must be a number or a quantity string such as '4Gi', got list [1]",
    ),
    "resources-per-node-negative-cpu": (
        "ValueError",
        'TrainJob.trainer.kubeflow.org "{name}" is invalid: spec.trainer.resourcesPerNode.limits.cpu: Invalid value: "-1": must be greater than or equal to 0; spec.trainer.resourcesPerNode.requests.cpu: Invalid value: "-1": must be greater than or equal to 0',
    ),
    "resources-per-node-negative-cpu-string": (
        "ValueError",
        'TrainJob.trainer.kubeflow.org "{name}" is invalid: spec.trainer.resourcesPerNode.limits.cpu: Invalid value: "-1": must be greater than or equal to 0; spec.trainer.resourcesPerNode.requests.cpu: Invalid value: "-1": must be greater than or equal to 0',
    ),
    "resources-per-node-ten-to-the-thirty-cpus": (
        "ValueError",
        'TrainJob.trainer.kubeflow.org "{name}" is invalid: spec.trainer.numProcPerNode: Invalid value: 1000000000000000000000000000000: must be at most {limit} on the local backend, where every process of every node runs on this machine ({cpus} CPUs); numProcPerNode (auto) is one process per CPU of resourcesPerNode or the runtime: lower it, or submit the job to a cluster',
    ),
    "resources-per-node-half-a-gpu": (
        "ValueError",
        'TrainJob.trainer.kubeflow.org "{name}" is invalid: spec.trainer.resourcesPerNode.limits.nvidia.com/gpu: Invalid value: "500m": must be an integer; spec.trainer.resourcesPerNode.requests.nvidia.com/gpu: Invalid value: "500m": must be an integer',
    ),
    "resources-per-node-empty-name": (
        "TypeError",
        "CustomTrainer resources_per_node keys must be resource names such as 'cpu', got ''",
    ),
    "resources-per-node-int-key": (
        "TypeError",
        "CustomTrainer resources_per_node keys must be resource names such as 'cpu', got 1",
    ),
    "resources-per-node-not-a-quantity": (
        "ValueError",
        'TrainJob.trainer.kubeflow.org "{name}" is invalid: spec.trainer.resourcesPerNode.limits.memory: Invalid value: "lots": quantities must match the regular expression \'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$\'; spec.trainer.resourcesPerNode.requests.memory: Invalid value: "lots": quantities must match the regular expression \'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$\'',
    ),
    "resources-per-node-nan": (
        "ValueError",
        "CustomTrainer resources_per_node['cpu'] must be a finite number, got nan",
    ),
    "packages-to-install-is-a-string": (
        "TypeError",
        "CustomTrainer packages_to_install must be a list of strings (for example ['numpy']), got str 'numpy'",
    ),
    "packages-to-install-of-ints": (
        "TypeError",
        "CustomTrainer packages_to_install must hold strings only, got int 1",
    ),
    "packages-to-install-with-an-option": (
        "ValueError",
        "CustomTrainer packages_to_install must be package names, not pip options: '--index-url=http://evil' (give package indexes with pip_index_urls)",
    ),
    "pip-index-urls-is-a-string": (
        "TypeError",
        "CustomTrainer pip_index_urls must be a list of strings (for example ['https://pypi.org/simple']), got str 'https://pypi.org/simple'",
    ),
    "pip-index-urls-empty": (
        "ValueError",
        "CustomTrainer pip_index_urls must name at least one entry",
    ),
    "pip-index-urls-of-ints": (
        "TypeError",
        "CustomTrainer pip_index_urls must hold strings only, got int 1",
    ),
    "num-nodes-is-a-string": (
        "TypeError",
        "CustomTrainer num_nodes must be an integer, got str '2'",
    ),
    "num-nodes-is-a-float": (
        "TypeError",
        "CustomTrainer num_nodes must be an integer, got float 2.5",
    ),
    "num-nodes-is-a-bool": (
        "TypeError",
        "CustomTrainer num_nodes must be an integer, got bool True",
    ),
    "num-nodes-negative": ("ValueError", "CustomTrainer num_nodes must be at least 0, got -1"),
    "num-nodes-a-million": (
        "ValueError",
        'TrainJob.trainer.kubeflow.org "{name}" is invalid: spec.trainer.numNodes: Invalid value: 1000000: must give at most 256 pods on the local backend, where every pod is a process on this machine (this job has 1000000): lower numNodes, or submit it to a cluster',
    ),
    "env-is-a-list": (
        "TypeError",
        "CustomTrainer env must be a dict of names to values, got list ['A=1']",
    ),
    "env-name-with-equals": (
        "ValueError",
        "env name 'A=B' is invalid: a valid environment variable name must consist only of printable ASCII characters other than '='",
    ),
    "env-value-is-a-dict": (
        "TypeError",
        "CustomTrainer env['A'] must be a string, got dict {'x': 1}",
    ),
    "env-value-with-nul": (
        "ValueError",
        'TrainJob.trainer.kubeflow.org "{name}" is invalid: spec.trainer.env[0].value: Invalid value: "x\\u0000y": must not contain a NUL byte',
    ),
    "env-int-key": ("TypeError", "CustomTrainer env names must be strings, got 1"),
    "func-is-a-string": ("TypeError", "CustomTrainer func must be a function, got str 'train'"),
    "func-is-a-lambda": (
        "ValueError",
        "Cannot ship function '<lambda>' as a training function: lambdas cannot be shipped; define it with `def` at the top level of a .py file or a notebook cell",
    ),
    "func-args-is-a-string": (
        "TypeError",
        "CustomTrainer func_args must be a dict of argument names to values, got str 'lr=0.1'",
    ),
    "func-args-not-a-literal": (
        "ValueError",
        "func_args of function 'train_with_args' must be Python literals (numbers, strings, booleans, None, and lists, tuples, dicts or sets of them), got {'lr': <object object at {addr}>}",
    ),
    "func-args-unknown-argument": (
        "ValueError",
        "func_args do not fit function 'train_with_args'(lr: 'float' = 0.1) -> 'None': it takes no argument named 'epochs'",
    ),
    "image-is-a-number": ("TypeError", "CustomTrainer image must be a string, got int 123"),
    "runtime-is-a-number": (
        "TypeError",
        "runtime must be a runtime name or a Runtime, got int 123",
    ),
    "runtime-unknown": (
        "RuntimeError",
        "Runtime 'no-such-runtime' not found (runtimes: deepspeed-distributed, jax-distributed, mpi-distributed, torch-distributed, torchtune-llama3.2-1b, torchtune-llama3.2-3b, torchtune-llama3.3-70b, torchtune-qwen2.5-1.5b, trl-distributed, xgboost-distributed)",
    ),
    "trainer-is-a-string": (
        "TypeError",
        "trainer must be a CustomTrainer, CustomTrainerContainer, BuiltinTrainer or ConfigTrainer, got str 'CustomTrainer'",
    ),
    "initializer-is-a-string": (
        "TypeError",
        "initializer must be an Initializer, got str 'hf://x'",
    ),
    "options-is-not-a-list": (
        "TypeError",
        "options must be a list of options (Name, Labels...), got str 'Name'",
    ),
    "options-holds-a-number": (
        "TypeError",
        "options must hold options such as Name('x'), got int 1",
    ),
    "builtin-config-is-a-dict": (
        "TypeError",
        "BuiltinTrainer config must be a TorchTuneConfig or TRLConfig, got dict {'epochs': 1}",
    ),
    "builtin-epochs-is-a-string": (
        "TypeError",
        "TorchTuneConfig epochs must be an integer, got str '3'",
    ),
    "builtin-batch-size-zero": (
        "ValueError",
        "TorchTuneConfig batch_size must be at least 1, got 0",
    ),
    "builtin-dtype-unknown": ("ValueError", "Invalid dtype: fp16."),
    "builtin-peft-config-is-a-dict": (
        "TypeError",
        "TorchTuneConfig peft_config must be a LoraConfig, got dict {'lora_rank': 8}",
    ),
    "builtin-num-nodes-is-a-string": (
        "TypeError",
        "TorchTuneConfig num_nodes must be an integer, got str '1'",
    ),
    "get-job-logs-step-is-a-number": (
        "TypeError",
        "step must be a step name such as 'node-0', got int 5",
    ),
    "get-job-logs-name-is-a-number": (
        "TypeError",
        "name must be a string (the TrainJob's name), got int 5",
    ),
    "get-job-logs-follow-is-a-string": ("TypeError", "follow must be True or False, got str 'yes'"),
    "wait-status-is-a-string": (
        "TypeError",
        "status must be a set of statuses (for example {\"Complete\"}), got str 'Complete'",
    ),
    "wait-status-unknown": (
        "ValueError",
        "Expected status {'Done'} must be a subset of {'Complete', 'Created', 'Failed', 'Running'}",
    ),
    "wait-timeout-is-a-string": ("TypeError", "timeout must be a number of seconds, got str '10'"),
    "wait-timeout-negative": ("ValueError", "timeout must be greater than 0 seconds, got -1"),
    "wait-polling-interval-zero": (
        "ValueError",
        "Polling interval must be a positive number, got polling_interval=0",
    ),
    "get-job-name-is-a-number": (
        "TypeError",
        "name must be a string (the TrainJob's name), got int 123",
    ),
    "get-job-name-with-nul": (
        "ValueError",
        "name must be a non-empty name without control characters, got 'job\\x00x'",
    ),
    "delete-job-name-is-none": (
        "TypeError",
        "name must be a string (the TrainJob's name), got NoneType None",
    ),
    "get-job-events-name-is-none": (
        "TypeError",
        "name must be a string (the TrainJob's name), got NoneType None",
    ),
    "get-runtime-name-is-a-number": (
        "TypeError",
        "name must be a string (the runtime's name), got int 5",
    ),
    "list-jobs-runtime-is-a-string": (
        "TypeError",
        "runtime must be a Runtime (from get_runtime or list_runtimes), got str 'torch-distributed'",
    ),
    "backend-config-is-a-string": ("ValueError", "Invalid backend config 'local'"),
}


def _message(e: BaseException) -> str:
    msg = re.sub(r'"[a-z][0-9a-f]{11}"', '"{name}"', str(e))  # the generated job name
    return re.sub(r"<object object at 0x[0-9a-f]+>", "<object object at {addr}>", msg)


def test_every_red_team_call_has_its_expected_error() -> None:
    assert sorted(EXPECTED) == sorted(inputs.SDK_CALLS)


@pytest.mark.parametrize("call", sorted(inputs.SDK_CALLS))
def test_a_bad_argument_is_one_clear_error_and_nothing_is_stored(call: str, tmp_path: Path) -> None:
    client = inputs._client(tmp_path)
    kind, want = EXPECTED[call]
    want = want.replace("{limit}", str(limits.max_procs_per_node()))
    want = want.replace("{cpus}", str(os.cpu_count() or 1))
    with pytest.raises(Exception) as err:
        got = inputs.SDK_CALLS[call](client)
        if hasattr(got, "__next__"):  # get_job_logs: the check runs on the first line
            next(got, None)
    assert (type(err.value).__name__, _message(err.value)) == (kind, want)
    assert stored_jobs(tmp_path / "home") == []


# -- hypothesis: any value for any argument ---------------------------------------------------

anything = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 10**30),
    st.floats(allow_nan=True),
    st.text(max_size=12),
    st.lists(st.one_of(st.integers(), st.text(max_size=6)), max_size=3),
    st.dictionaries(
        st.text(max_size=6), st.one_of(st.integers(-2, 4), st.text(max_size=6)), max_size=3
    ),
)
resources = st.one_of(
    anything,
    st.dictionaries(
        st.sampled_from(["cpu", "memory", "gpu", "nvidia.com/gpu", "", "CPU", "x/y/z"]),
        st.one_of(
            st.integers(-2, 10**30),
            st.sampled_from(["1", "-1", "0.5", "2Gi", "lots", "1e30"]),
            st.floats(),
        ),
        max_size=3,
    ),
)
custom = st.builds(
    CustomTrainer,
    func=st.one_of(st.just(inputs.train_fn), st.just(inputs.train_with_args), anything),
    func_args=st.one_of(st.none(), st.just({"lr": 0.5}), anything),
    image=st.one_of(st.none(), anything),
    packages_to_install=st.one_of(st.none(), st.just(["numpy"]), anything),
    pip_index_urls=st.one_of(st.just(["https://pypi.org/simple"]), anything),
    num_nodes=st.one_of(st.none(), st.integers(-2, 300), anything),
    resources_per_node=resources,
    env=st.one_of(st.none(), st.just({"A": "1"}), anything),
)
trainers = st.one_of(
    custom,
    st.builds(
        CustomTrainerContainer, image=anything, num_nodes=anything, resources_per_node=resources
    ),
    st.builds(
        BuiltinTrainer,
        config=st.one_of(
            st.builds(TorchTuneConfig, epochs=anything, batch_size=anything, num_nodes=anything),
            anything,
        ),
    ),
    anything,
)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None
)
@given(
    runtime=st.one_of(
        st.none(),
        st.sampled_from(["torch-distributed", "torchtune-qwen2.5-1.5b", "nope"]),
        anything,
    ),
    trainer=trainers,
    initializer=st.one_of(st.none(), st.just(Initializer()), anything),
    options=st.one_of(st.none(), st.just([]), anything),
)
def test_train_with_any_arguments_submits_or_raises_one_clear_error(
    runtime: Any,
    trainer: Any,
    initializer: Any,
    options: Any,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    home = tmp_path_factory.mktemp("home")
    client = TrainerClient(LocalProcessBackendConfig(home=home, cwd=str(home)))
    # Submitting is replaced by its checks (LocalExecutor.check: the same validation, limits
    # and command checks, without starting processes), so 150 examples take seconds.
    ex: LocalExecutor = client.backend.executor  # type: ignore[attr-defined]

    def check_only(
        tj: TrainJob, runtimes: Sequence[Runtime] = (), *, cwd: str | None = None
    ) -> TrainJob:
        ex.check(tj, runtimes, cwd=cwd)
        return tj

    ex.submit = check_only  # type: ignore[method-assign, assignment]
    try:
        client.train(runtime=runtime, trainer=trainer, initializer=initializer, options=options)
    except (TypeError, ValueError) as e:
        assert str(e) and "Traceback" not in str(e)
    except RuntimeError as e:
        assert "not found" in str(e) or "Failed to create TrainJob" in str(e), e
