"""JobSet and Job names a TrainJob's status and pods are read by: label keys, condition types,
reasons and messages, spelled exactly as upstream (kubernetes-sigs/jobset ``pkg/constants``,
``api/jobset/v1alpha2``; kubernetes ``batch/v1``).

The JobSet controller writes them on a cluster; the local supervisor writes the same ones for
its processes, so every reader (the controller's status mapping, the Kubernetes and local
executors, the SDK, the CLI) understands both.
"""

from __future__ import annotations

# Labels (and annotations) JobSet puts on its Jobs and pods.
LABEL_JOBSET_NAME = "jobset.sigs.k8s.io/jobset-name"
LABEL_JOBSET_UID = "jobset.sigs.k8s.io/jobset-uid"
LABEL_REPLICATED_JOB_NAME = "jobset.sigs.k8s.io/replicatedjob-name"
LABEL_REPLICATED_JOB_REPLICAS = "jobset.sigs.k8s.io/replicatedjob-replicas"
LABEL_JOB_INDEX = "jobset.sigs.k8s.io/job-index"
LABEL_JOB_GLOBAL_INDEX = "jobset.sigs.k8s.io/job-global-index"
LABEL_JOB_KEY = "jobset.sigs.k8s.io/job-key"
LABEL_RESTART_ATTEMPT = "jobset.sigs.k8s.io/restart-attempt"

# The Job controller's labels: the completion index (also an annotation) of an Indexed Job's
# pods, and the Job a pod belongs to.
LABEL_COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"
LABEL_JOB_NAME = "batch.kubernetes.io/job-name"

# JobSet condition types.
CONDITION_COMPLETED = "Completed"
CONDITION_FAILED = "Failed"
CONDITION_SUSPENDED = "Suspended"
CONDITION_STARTUP_POLICY_COMPLETED = "StartupPolicyCompleted"

# JobSet reasons and messages (pkg/constants).
REASON_ALL_JOBS_COMPLETED = "AllJobsCompleted"
MESSAGE_ALL_JOBS_COMPLETED = "jobset completed successfully"
REASON_FAILED_JOBS = "FailedJobs"
MESSAGE_FAILED_JOBS = "jobset failed due to one or more job failures"
REASON_REACHED_MAX_RESTARTS = "ReachedMaxRestarts"
MESSAGE_REACHED_MAX_RESTARTS = "jobset failed due to reaching max number of restarts"
REASON_FAIL_JOBSET_ACTION = "FailJobSetFailurePolicyAction"
MESSAGE_FAIL_JOBSET_ACTION = "applying FailJobSet failure policy action"
REASON_RESTARTING = "Restarting"
REASON_SUSPENDED = "SuspendedJobs"
MESSAGE_SUSPENDED = "jobset is suspended"
REASON_RESUMED = "ResumeJobs"
MESSAGE_RESUMED = "jobset is resumed"

# Job (batch/v1) reasons.
REASON_BACKOFF_LIMIT_EXCEEDED = "BackoffLimitExceeded"
MESSAGE_BACKOFF_LIMIT_EXCEEDED = "Job has reached the specified backoff limit"


def with_first_failed_job(message: str, job_name: str) -> str:
    """JobSet's ``messageWithFirstFailedJob``."""
    return f"{message} (first failed job: {job_name})"
