"""Names, labels and values shared with upstream Kubeflow Trainer (spelled exactly as upstream)."""

from __future__ import annotations

from trainjob.core import jobset

GROUP = "trainer.kubeflow.org"
VERSION = "v1alpha1"
API_VERSION = f"{GROUP}/{VERSION}"

TRAINJOB_KIND = "TrainJob"
TRAINING_RUNTIME_KIND = "TrainingRuntime"
CLUSTER_TRAINING_RUNTIME_KIND = "ClusterTrainingRuntime"

# Label on a replicatedJob's template.metadata tying it to a part of the TrainJob spec.
LABEL_ANCESTOR = "trainer.kubeflow.org/trainjob-ancestor-step"
ANCESTOR_DATASET_INITIALIZER = "dataset-initializer"
ANCESTOR_MODEL_INITIALIZER = "model-initializer"
ANCESTOR_TRAINER = "trainer"
ANCESTORS = (ANCESTOR_DATASET_INITIALIZER, ANCESTOR_MODEL_INITIALIZER, ANCESTOR_TRAINER)

# Required container name per ancestor.
CONTAINER_DATASET_INITIALIZER = "dataset-initializer"
CONTAINER_MODEL_INITIALIZER = "model-initializer"
CONTAINER_NODE = "node"
REQUIRED_CONTAINER = {
    ANCESTOR_DATASET_INITIALIZER: CONTAINER_DATASET_INITIALIZER,
    ANCESTOR_MODEL_INITIALIZER: CONTAINER_MODEL_INITIALIZER,
    ANCESTOR_TRAINER: CONTAINER_NODE,
}

JOB_NODE = "node"
JOB_LAUNCHER = "launcher"
JOB_DATASET_INITIALIZER = "dataset-initializer"
JOB_MODEL_INITIALIZER = "model-initializer"

INITIALIZER_VOLUME = "initializer"
DATASET_MOUNT_PATH = "/workspace/dataset"
MODEL_MOUNT_PATH = "/workspace/model"
ENV_STORAGE_URI = "STORAGE_URI"

LABEL_FRAMEWORK = "trainer.kubeflow.org/framework"
LABEL_SUPPORT = "trainer.kubeflow.org/support"
SUPPORT_DEPRECATED = "deprecated"
LABEL_WEBHOOK_VALIDATION = "trainer.kubeflow.org/webhook-validation"

CONTAINER_TRAINER_PORT = 29500

MANAGED_BY_TRAINER = "trainer.kubeflow.org/trainjob-controller"
MANAGED_BY_MULTIKUEUE = "kueue.x-k8s.io/multikueue"

# The pod annotation a node's rank is read from (JobSet/Job label keys: trainjob.core.jobset).
JOB_COMPLETION_INDEX_FIELD = f"metadata.annotations['{jobset.LABEL_COMPLETION_INDEX}']"

# Torch
TORCH_ENV_NUM_NODES = "PET_NNODES"
TORCH_ENV_NUM_PROC_PER_NODE = "PET_NPROC_PER_NODE"
TORCH_ENV_NODE_RANK = "PET_NODE_RANK"
TORCH_ENV_MASTER_ADDR = "PET_MASTER_ADDR"
TORCH_ENV_MASTER_PORT = "PET_MASTER_PORT"
# KEP-2903 elastic PyTorch: torchrun's rendezvous flags as its PET_* envs
TORCH_ENV_RDZV_BACKEND = "PET_RDZV_BACKEND"
TORCH_ENV_RDZV_ID = "PET_RDZV_ID"
TORCH_ENV_RDZV_ENDPOINT = "PET_RDZV_ENDPOINT"
TORCH_ENV_RDZV_CONF = "PET_RDZV_CONF"
TORCH_ENV_MAX_RESTARTS = "PET_MAX_RESTARTS"
TORCH_RDZV_BACKEND_C10D = "c10d"
TORCH_RESERVED_ENVS = (
    TORCH_ENV_NUM_NODES,
    TORCH_ENV_NUM_PROC_PER_NODE,
    TORCH_ENV_NODE_RANK,
    TORCH_ENV_MASTER_ADDR,
    TORCH_ENV_MASTER_PORT,
)

# TorchTune (the BuiltinTrainer): a trainer command of exactly ``tune run`` is rewritten.
TORCHTUNE_ENTRYPOINT = ("tune", "run")
TORCHTUNE_ARG_RDZV_ENDPOINT = "--rdzv_endpoint"
TORCHTUNE_ARG_CONFIG = "--config"
TORCHTUNE_FULL_FINETUNE_SINGLE_DEVICE = "full_finetune_single_device"
TORCHTUNE_FULL_FINETUNE_SINGLE_DEVICE_CONFIG_SUFFIX = "_full_single_device"
TORCHTUNE_FULL_FINETUNE_DISTRIBUTED = "full_finetune_distributed"
TORCHTUNE_FULL_FINETUNE_MULTI_DEVICES_CONFIG_SUFFIX = "_full"
TORCHTUNE_FULL_FINETUNE_MULTI_NODES_CONFIG_SUFFIX = "_full_multinode"
TORCHTUNE_LORA_FINETUNE_SINGLE_DEVICE = "lora_finetune_single_device"
TORCHTUNE_LORA_FINETUNE_SINGLE_DEVICE_CONFIG_SUFFIX = "_lora_single_device"
TORCHTUNE_QLORA_FINETUNE_SINGLE_DEVICE_CONFIG_SUFFIX = "_qlora_single_device"
TORCHTUNE_LORA_FINETUNE_DISTRIBUTED = "lora_finetune_distributed"
TORCHTUNE_LORA_FINETUNE_DISTRIBUTED_CONFIG_SUFFIX = "_lora"
TORCHTUNE_QLORA_FINETUNE_DISTRIBUTED_CONFIG_SUFFIX = "_qlora"
TORCHTUNE_LORA_ATTN_MODULES = "model.lora_attn_modules"
TORCHTUNE_QUANTIZE_BASE = "model.quantize_base"
TORCHTUNE_USE_DORA = "model.use_dora"
TORCHTUNE_MODEL_OUTPUT_DIR = "output_dir"
TORCHTUNE_TOKENIZER_PATH = "tokenizer.path"
TORCHTUNE_TOKENIZER_MERGE_FILE = "tokenizer.merges_file"
TORCHTUNE_CHECKPOINT_DIR = "checkpointer.checkpoint_dir"
TORCHTUNE_IMMUTABLE_CONFIGS = (
    TORCHTUNE_MODEL_OUTPUT_DIR,
    TORCHTUNE_TOKENIZER_PATH,
    TORCHTUNE_CHECKPOINT_DIR,
    TORCHTUNE_TOKENIZER_MERGE_FILE,
)
TORCHTUNE_MODEL_LLAMA3_2_1B = "llama3_2/1B"
TORCHTUNE_MODEL_LLAMA3_2_3B = "llama3_2/3B"
TORCHTUNE_MODEL_LLAMA3_3_70B = "llama3_3/70B"
TORCHTUNE_MODEL_QWEN2_5_1_5B = "qwen2_5/1.5B"
TORCHTUNE_SUPPORTED_PRETRAINED_MODELS = (
    TORCHTUNE_MODEL_LLAMA3_2_1B,
    TORCHTUNE_MODEL_LLAMA3_2_3B,
    TORCHTUNE_MODEL_LLAMA3_3_70B,
    TORCHTUNE_MODEL_QWEN2_5_1_5B,
)

# MPI
MPI_IMPL_OPENMPI = "OpenMPI"
MPI_IMPL_INTEL = "Intel"
MPI_IMPL_MPICH = "MPICH"
MPI_SSH_AUTH_VOLUME = "mpi-ssh-auth"
MPI_HOSTFILE_VOLUME = "mpi-hostfile"
MPI_HOSTFILE_DIR = "/etc/mpi"
MPI_HOSTFILE_NAME = "hostfile"
OPENMPI_ENV_HOSTFILE = "OMPI_MCA_orte_default_hostfile"
OPENMPI_ENV_RSH_ARGS = "OMPI_MCA_plm_rsh_args"
OPENMPI_ENV_KEEP_FQDN = "OMPI_MCA_orte_keep_fqdn_hostnames"
OPENMPI_ENV_DEFAULT_SLOTS = "OMPI_MCA_orte_set_default_slots"
MPI_RESERVED_ENVS = (
    OPENMPI_ENV_HOSTFILE,
    OPENMPI_ENV_RSH_ARGS,
    OPENMPI_ENV_KEEP_FQDN,
    OPENMPI_ENV_DEFAULT_SLOTS,
)

# XGBoost / JAX
XGBOOST_RESERVED_ENVS = ("DMLC_TRACKER_URI", "DMLC_TRACKER_PORT", "DMLC_TASK_ID", "DMLC_NUM_WORKER")

# Conditions
CONDITION_SUSPENDED = "Suspended"
CONDITION_COMPLETE = "Complete"
CONDITION_FAILED = "Failed"
REASON_SUSPENDED = "Suspended"
REASON_RESUMED = "Resumed"
REASON_RUNTIME_NOT_SUPPORTED = "TrainingRuntimeNotSupported"
REASON_DEADLINE_EXCEEDED = "DeadlineExceeded"
MESSAGE_SUSPENDED = "TrainJob is suspended"
MESSAGE_RESUMED = "TrainJob is resumed"
MESSAGE_DEADLINE_EXCEEDED = "TrainJob exceeded its active deadline"

# Scheduling
COSCHEDULING_POD_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"
VOLCANO_POD_GROUP_ANNOTATION = "scheduling.k8s.io/group-name"
VOLCANO_QUEUE_ANNOTATION = "scheduling.volcano.sh/queue-name"
VOLCANO_PRIORITY_CLASSES_ALWAYS_PRESENT = ("system-cluster-critical", "system-node-critical")
COSCHEDULING_API_VERSION = "scheduling.x-k8s.io/v1alpha1"
VOLCANO_API_VERSION = "scheduling.volcano.sh/v1beta1"
POD_GROUP_KIND = "PodGroup"

# MPI: the SSH Secret and hostfile ConfigMap the MPI plugin plans, and their volumes.
MPI_SSH_AUTH_SECRET_SUFFIX = "-mpi-ssh-auth"
MPI_HOSTFILE_CONFIGMAP_SUFFIX = "-mpi-hostfile"
SECRET_TYPE_SSH_AUTH = "kubernetes.io/ssh-auth"
SSH_AUTH_PRIVATE_KEY = "ssh-privatekey"
MPI_SSH_PUBLIC_KEY = "ssh-publickey"
MPI_SSH_PRIVATE_KEY_FILE = "id_rsa"
MPI_SSH_PUBLIC_KEY_FILE = "id_rsa.pub"
MPI_SSH_AUTHORIZED_KEYS = "authorized_keys"
MPI_SSH_AUTH_DEFAULT_MODE = 0o400
MPI_SSH_PRIVATE_KEY_FILE_MODE = 0o640
MPI_SSH_PUBLIC_KEY_FILE_MODE = 0o644
MPI_HOSTFILE_MODE = 0o444
OPENMPI_RSH_ARGS_DEFAULT = "-o ConnectionAttempts=10"

# JAX
JAX_ENV_NUM_PROCESSES = "JAX_NUM_PROCESSES"
JAX_ENV_PROCESS_ID = "JAX_PROCESS_ID"
JAX_ENV_COORDINATOR_ADDRESS = "JAX_COORDINATOR_ADDRESS"

# XGBoost (names of XGBOOST_RESERVED_ENVS, in the order the plugin sets them)
XGBOOST_ENV_TRACKER_URI = "DMLC_TRACKER_URI"
XGBOOST_ENV_TRACKER_PORT = "DMLC_TRACKER_PORT"
XGBOOST_ENV_TASK_ID = "DMLC_TASK_ID"
XGBOOST_ENV_NUM_WORKER = "DMLC_NUM_WORKER"

# Controller and webhooks (upstream pkg/controller, pkg/runtime/core, pkg/webhooks)
# The Events' reportingController: upstream's recorder name (pkg/controller/setup.go).
CONTROLLER_NAME = "trainer-trainjob-controller"
# The webhook configurations the manifests install (the controller keeps their CA bundle).
MUTATING_WEBHOOK_CONFIGURATION = "trainjob-mutating-webhook-configuration"
VALIDATING_WEBHOOK_CONFIGURATION = "trainjob-validating-webhook-configuration"
RUNTIME_SNAPSHOT_SUFFIX = "-runtime-snapshot"
RUNTIME_SNAPSHOT_KEY = "runtime"
EVENT_RESOURCES_CREATION_FAILED = "TrainJobResourcesCreationFailed"
EVENT_ACTION_RECONCILING = "Reconciling"
RESOURCES_RECONCILIATION_FAILED = "TrainJob resources reconciliation failed: "
RUNTIME_DEPRECATION_POLICY_URL = (
    "https://trainer.kubeflow.org/en/latest/operator-guides/runtime.html#runtime-deprecation-policy"
)

# Resume after a JobSet restart (trainjob's own): the variables custom training code reads, set by
# the local backend in every container and by the Resume plugin on a cluster.
ENV_CHECKPOINT_DIR = "TRAINJOB_CHECKPOINT_DIR"
ENV_RESTART_ATTEMPT = "TRAINJOB_RESTART_ATTEMPT"

# OptimizationJob (upstream main after v2.3: pkg/apis/trainer/v1alpha1/optimizationjob_types.go).
OPTIMIZATION_JOB_KIND = "OptimizationJob"
# On every trial TrainJob: the OptimizationJob it belongs to, and its index (0, 1, ...).
LABEL_OPTIMIZATION_JOB = "trainer.kubeflow.org/optimization-job"
LABEL_TRIAL_INDEX = "trainer.kubeflow.org/trial-index"
# A trial's parameter values, a JSON object of strings ({"lr": "0.01"}).
ANNOTATION_TRIAL_PARAMETERS = "trainer.kubeflow.org/trial-parameters"
# Set on a trial stopped early (trainjob's earlyStopping): why, in a sentence.
ANNOTATION_TRIAL_STOPPED = "trainer.kubeflow.org/trial-stopped"
# KEP 2605 section 8.2: each parameter reaches the trainer as KUBEFLOW_TRAINER_OPT_<NAME>
# (the name upper-cased), in spec.trainer.env of every trial.
ENV_TRIAL_PARAMETER_PREFIX = "KUBEFLOW_TRAINER_OPT_"

# OptimizationJob conditions (KEP 2605 section 7.4: Created, Complete, Failed; Running is
# trainjob's, True while trials run). Reasons CamelCase, messages lower-case sentences.
CONDITION_CREATED = "Created"
CONDITION_RUNNING = "Running"
REASON_TRIALS_CREATED = "TrialsCreated"
MESSAGE_TRIALS_CREATED = "OptimizationJob is accepted and its trials are being created"
REASON_TRIALS_RUNNING = "TrialsRunning"
MESSAGE_TRIALS_RUNNING = "{active} of {total} trials running, {done} finished"
REASON_ALL_TRIALS_FINISHED = "AllTrialsFinished"
MESSAGE_ALL_TRIALS_FINISHED = "all {done} trials finished; the best is {best}"
REASON_MAX_FAILED_TRIALS_EXCEEDED = "MaxFailedTrialsExceeded"
MESSAGE_MAX_FAILED_TRIALS_EXCEEDED = "{failed} trials failed, more than maxFailedTrials ({limit})"
REASON_ALL_TRIALS_FAILED = "AllTrialsFailed"
MESSAGE_ALL_TRIALS_FAILED = "all {done} trials failed or were stopped; none reported {metric}"
