"""TrainJob status as the cluster shows it: conditions, reasons and messages, jobsStatus.

Reasons and messages are upstream's, verbatim: the TrainJob controller's (Suspended, Resumed,
DeadlineExceeded) and the JobSet controller's that a TrainJob copies into Complete/Failed
(AllJobsCompleted, FailedJobs, ReachedMaxRestarts, FailJobSetFailurePolicyAction). The local
backend adds reasons for what only happens here (a supervisor that died, a pod that cannot run on
this machine). Used by the supervisor (writing) and the executor (a dead supervisor).
"""

from __future__ import annotations

from typing import Any

from trainjob.api import constants as c

# JobSet (kubernetes-sigs/jobset pkg/constants).
REASON_ALL_JOBS_COMPLETED = "AllJobsCompleted"
MESSAGE_ALL_JOBS_COMPLETED = "jobset completed successfully"
REASON_FAILED_JOBS = "FailedJobs"
MESSAGE_FAILED_JOBS = "jobset failed due to one or more job failures"
REASON_REACHED_MAX_RESTARTS = "ReachedMaxRestarts"
MESSAGE_REACHED_MAX_RESTARTS = "jobset failed due to reaching max number of restarts"
REASON_FAIL_JOBSET_ACTION = "FailJobSetFailurePolicyAction"
MESSAGE_FAIL_JOBSET_ACTION = "applying FailJobSet failure policy action"
REASON_RESTARTING = "Restarting"
REASON_JOBSET_SUSPENDED = "SuspendedJobs"
MESSAGE_JOBSET_SUSPENDED = "jobset is suspended"
REASON_JOBSET_RESUMED = "ResumeJobs"
MESSAGE_JOBSET_RESUMED = "jobset is resumed"

# Job (kubernetes batch/v1).
REASON_BACKOFF_LIMIT_EXCEEDED = "BackoffLimitExceeded"
MESSAGE_BACKOFF_LIMIT_EXCEEDED = "Job has reached the specified backoff limit"

# Local only.
REASON_SUPERVISOR_DIED = "SupervisorDied"
REASON_SUPERVISOR_ERROR = "SupervisorError"
REASON_POD_CONFIG_ERROR = "CreateContainerConfigError"


def with_first_failed_job(message: str, job_name: str) -> str:
    """JobSet's ``messageWithFirstFailedJob``."""
    return f"{message} (first failed job: {job_name})"


def set_condition(
    status: dict[str, Any], ctype: str, value: bool, reason: str, message: str, now: str
) -> bool:
    """Set condition ``ctype`` like ``meta.SetStatusCondition``; whether anything changed.

    ``lastTransitionTime`` changes only when the status flips.
    """
    conds: list[dict[str, Any]] = status.setdefault("conditions", [])
    want = "True" if value else "False"
    for cond in conds:
        if cond.get("type") != ctype:
            continue
        changed = False
        if cond.get("status") != want:
            cond["status"] = want
            cond["lastTransitionTime"] = now
            changed = True
        if cond.get("reason") != reason or cond.get("message") != message:
            cond["reason"], cond["message"] = reason, message
            changed = True
        return changed
    conds.append(
        {
            "type": ctype,
            "status": want,
            "reason": reason,
            "message": message,
            "lastTransitionTime": now,
        }
    )
    return True


def condition(status: dict[str, Any], ctype: str) -> dict[str, Any] | None:
    for cond in status.get("conditions") or ():
        if cond.get("type") == ctype:
            return dict(cond)
    return None


def is_true(status: dict[str, Any], ctype: str) -> bool:
    cond = condition(status, ctype)
    return bool(cond and cond.get("status") == "True")


def suspended(status: dict[str, Any], now: str) -> bool:
    return set_condition(
        status, c.CONDITION_SUSPENDED, True, c.REASON_SUSPENDED, c.MESSAGE_SUSPENDED, now
    )


def resumed(status: dict[str, Any], now: str) -> bool:
    """Suspended=False/Resumed, only if the job was suspended (as the TrainJob controller)."""
    if not is_true(status, c.CONDITION_SUSPENDED):
        return False
    return set_condition(
        status, c.CONDITION_SUSPENDED, False, c.REASON_RESUMED, c.MESSAGE_RESUMED, now
    )


def failed(status: dict[str, Any], reason: str, message: str, now: str) -> bool:
    return set_condition(status, c.CONDITION_FAILED, True, reason, message, now)


def complete(status: dict[str, Any], now: str) -> bool:
    return set_condition(
        status,
        c.CONDITION_COMPLETE,
        True,
        REASON_ALL_JOBS_COMPLETED,
        MESSAGE_ALL_JOBS_COMPLETED,
        now,
    )
