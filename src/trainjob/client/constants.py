"""Constants of the upstream Kubeflow Python SDK (``kubeflow.trainer``), spelled as upstream.

Used by the SDK types, the TrainJob builder and both backends. The cluster-side names (group,
labels, container names) come from :mod:`trainjob.api.constants`; this module adds what only the
SDK defines: statuses, step names, generated commands and defaults.
"""

from __future__ import annotations

import os

from trainjob.api import constants as api
from trainjob.core import jobset as js

GROUP = api.GROUP
VERSION = api.VERSION
API_VERSION = api.API_VERSION
TRAINJOB_KIND = api.TRAINJOB_KIND
TRAINJOB_PLURAL = "trainjobs"
TRAINING_RUNTIME_KIND = api.TRAINING_RUNTIME_KIND
TRAINING_RUNTIME_PLURAL = "trainingruntimes"
CLUSTER_TRAINING_RUNTIME_KIND = api.CLUSTER_TRAINING_RUNTIME_KIND
CLUSTER_TRAINING_RUNTIME_PLURAL = "clustertrainingruntimes"

# TrainJob statuses as the SDK reports them.
TRAINJOB_CREATED = "Created"
TRAINJOB_RUNNING = "Running"
TRAINJOB_COMPLETE = "Complete"
TRAINJOB_FAILED = "Failed"
TRAINJOB_STATUSES = frozenset(
    {TRAINJOB_CREATED, TRAINJOB_RUNNING, TRAINJOB_COMPLETE, TRAINJOB_FAILED}
)

# Pod phases.
POD_PENDING = "Pending"
POD_RUNNING = "Running"
POD_SUCCEEDED = "Succeeded"
POD_FAILED = "Failed"

UNKNOWN = "Unknown"
DEFAULT_NAMESPACE = "default"
DEFAULT_TIMEOUT = 120  # seconds, for one Kubernetes API call

# Step (replicatedJob and container) names.
DATASET_INITIALIZER = api.JOB_DATASET_INITIALIZER
MODEL_INITIALIZER = api.JOB_MODEL_INITIALIZER
LAUNCHER = api.JOB_LAUNCHER
NODE = api.JOB_NODE

TRAINJOB_ANCESTOR_LABEL = api.LABEL_ANCESTOR
RUNTIME_FRAMEWORK_LABEL = api.LABEL_FRAMEWORK
POD_LABEL_SELECTOR = (
    f"{js.LABEL_JOBSET_NAME}={{trainjob_name}},{js.LABEL_REPLICATED_JOB_NAME} "
    f"in ({DATASET_INITIALIZER}, {MODEL_INITIALIZER}, {LAUNCHER}, {NODE})"
)

# Resource names.
CPU_LABEL = "cpu"
GPU_LABEL = "nvidia.com/gpu"
GPU_MIG_PREFIX = "nvidia.com/mig-"
TPU_LABEL = "google.com/tpu"
NPU_LABEL = "huawei.com/Ascend910"

# Initializers.
INITIALIZER_ENV_ACCESS_TOKEN = "ACCESS_TOKEN"
INITIALIZER_DEFAULT_IGNORE_PATTERNS = ["*.msgpack", "*.h5", "*.bin", "*.pt", "*.pth"]
WORKSPACE_PATH = "/workspace"
DATASET_PATH = api.DATASET_MOUNT_PATH
MODEL_PATH = api.MODEL_MOUNT_PATH
OUTPUT_PATH = "/workspace/output"
"""Where the LLM runtimes' trainers write the model (on the initializers' volume)."""

TORCH_ENV_NUM_PROC_PER_NODE = api.TORCH_ENV_NUM_PROC_PER_NODE

# Commands.
TORCH_TUNE = "torchtune"
TORCH_TUNE_COMMAND = ("tune", "run")
TORCH_TUNE_INSTRUCT_DATASET = "torchtune.datasets.instruct_dataset"
TRL = "trl"
TRL_COMMAND = ("trl",)
TRL_SCRIPTS = "trl.scripts."
"""The package of TRL's training scripts, one module per method (KEP-2839's runtime runs
``torchrun -m trl.scripts.sft``)."""
MPI_HOSTFILE = "/etc/mpi/hostfile"
DEFAULT_MPI_USER_HOME = os.getenv("DEFAULT_MPI_USER_HOME", "/home/mpiuser")

# Defaults a user may override through the environment, as upstream.
DEFAULT_TRAINING_RUNTIME = os.getenv("DEFAULT_TRAINING_RUNTIME", "torch-distributed")
DEFAULT_PIP_INDEX_URLS = os.getenv("DEFAULT_PIP_INDEX_URLS", "https://pypi.org/simple").split(",")

# Generated TrainJob names: one random lowercase letter + 11 hex characters.
JOB_NAME_UUID_LENGTH = 11

# RuntimePatch manager the SDK writes.
RUNTIME_PATCH_MANAGER = "trainer.kubeflow.org/kubeflow-sdk"
