"""The JobSet and Job controllers' rules, as the local supervisor plays them on one attempt.

Pure functions over one attempt of a JobSet: its pod templates, its pods' rows and each Job's
failure count. A Job fails once its pods failed more than its ``backoffLimit`` times and is
complete when every pod succeeded; ``dependsOn`` and ``startupPolicyOrder: InOrder`` gate a
pod's start; the success policy (``All``/``Any`` of the target replicatedJobs) completes the
JobSet; the failure policy's first matching rule says what a failed Job does to it; a
(re)started JobSet's pods are all Pending. Used by
:mod:`trainjob.local.job.supervisor`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from trainjob.api import constants as c
from trainjob.core import jobset as js
from trainjob.executor import model as st
from trainjob.local.job import mpi
from trainjob.local.job.pods import PodTemplate
from trainjob.local.state.store import PodRow

Key = tuple[str, int, int]  # (replicatedJob, job index, completion index)
Rows = Mapping[Key, PodRow]
Failures = Mapping[tuple[str, int], int]  # (replicatedJob, job index) -> its pods' failures


@dataclass(frozen=True)
class JobSetSpec:
    """What the supervisor reads of the Plan's JobSet, once."""

    name: str
    rjob_names: tuple[str, ...]  # its replicatedJobs, in order
    success_policy: Mapping[str, Any]
    failure_policy: Mapping[str, Any] | None
    in_order: bool  # startupPolicyOrder: InOrder
    trainer_jobs: frozenset[str]  # the replicatedJobs of the trainer (given the status endpoint)


def spec_of(jobset: Mapping[str, Any]) -> JobSetSpec:
    js_spec = jobset.get("spec") or {}
    startup = js_spec.get("startupPolicy") or {}
    return JobSetSpec(
        name=jobset["metadata"]["name"],
        rjob_names=tuple(r["name"] for r in js_spec.get("replicatedJobs") or ()),
        success_policy=js_spec.get("successPolicy") or {},
        failure_policy=js_spec.get("failurePolicy"),
        in_order=startup.get("startupPolicyOrder") == "InOrder",
        trainer_jobs=frozenset(
            r["name"]
            for r in js_spec.get("replicatedJobs") or ()
            if ((r.get("template") or {}).get("metadata") or {})
            .get("labels", {})
            .get(c.LABEL_ANCESTOR)
            == c.ANCESTOR_TRAINER
        ),
    )


def pending_rows(
    templates: Sequence[PodTemplate],
    namespace: str,
    name: str,
    uid: str,
    restarts: int,
    local_mpi: mpi.LocalMPI | None,
) -> tuple[dict[Key, PodRow], set[Key]]:
    """The pods of a (re)started JobSet, all Pending, and those that run no process here (the
    sshd-only pods of OpenMPI on one host, :mod:`trainjob.local.job.mpi`)."""
    rows: dict[Key, PodRow] = {}
    virtual: set[Key] = set()
    for t in templates:
        key = (t.job, t.job_index, t.index)
        message = ""
        if local_mpi and local_mpi.skips(t):
            virtual.add(key)
            message = mpi.SKIPPED_MESSAGE
        rows[key] = PodRow(
            namespace,
            name,
            uid,
            t.job,
            t.job_index,
            t.index,
            t.name,
            st.POD_PENDING,
            restarts=restarts,
            message=message,
        )
    return rows, virtual


def backoff_limit(templates: Sequence[PodTemplate], rname: str) -> int:
    """The ``backoffLimit`` of replicatedJob ``rname``'s Jobs."""
    for t in templates:
        if t.job == rname:
            return t.backoff_limit
    return 0


def job_state(
    templates: Sequence[PodTemplate], rows: Rows, failures: Failures, rname: str, j: int
) -> str:
    """``Failed``, ``Complete`` or ``Active``: Job ``j`` of replicatedJob ``rname``."""
    keys = [k for k in rows if k[0] == rname and k[1] == j]
    if failures.get((rname, j), 0) > backoff_limit(templates, rname):
        return "Failed"
    if keys and all(rows[k].phase == st.POD_SUCCEEDED for k in keys):
        return "Complete"
    return "Active"


def ready(rows: Rows, rname: str) -> bool:
    """Every pod of replicatedJob ``rname`` is Ready or has succeeded."""
    return all(
        r.phase == st.POD_SUCCEEDED or (r.phase == st.POD_RUNNING and r.ready)
        for k, r in rows.items()
        if k[0] == rname
    )


def deps_met(t: PodTemplate, rows: Rows, rjob_names: Sequence[str], in_order: bool) -> bool:
    """Whether pod ``t`` may start: its ``dependsOn`` met, and with ``InOrder`` every
    replicatedJob before its own Ready."""
    if in_order:
        # startupPolicyOrder InOrder: each replicatedJob waits for the ones before it to be
        # ready, as JobSet creates them.
        for rname in rjob_names[: list(rjob_names).index(t.job)]:
            if not ready(rows, rname):
                return False
    for dep, want in t.depends_on:
        dep_rows = [r for k, r in rows.items() if k[0] == dep]
        if want == "Complete" and not all(r.phase == st.POD_SUCCEEDED for r in dep_rows):
            return False
        if want == "Ready" and not ready(rows, dep):
            return False
    return True


def failed_jobs(
    templates: Sequence[PodTemplate], rows: Rows, failures: Failures
) -> list[tuple[str, int]]:
    """The Jobs (replicatedJob, index) of this attempt that failed."""
    return [
        (t.job, t.job_index)
        for t in templates
        if t.index == 0 and job_state(templates, rows, failures, t.job, t.job_index) == "Failed"
    ]


def failure_action(policy: Mapping[str, Any], rname: str) -> str:
    """What the JobSet failure policy's first rule matching a failed Job of ``rname`` (its
    pods past backoffLimit) says: ``FailJobSet``, ``RestartJobSet`` (counted against
    ``maxRestarts``) or ``RestartJobSetAndIgnoreMaxRestarts``."""
    action = "RestartJobSet"
    for rule in policy.get("rules") or ():
        targets = rule.get("targetReplicatedJobs") or []
        reasons = rule.get("onJobFailureReasons") or []
        if (not targets or rname in targets) and (
            not reasons or js.REASON_BACKOFF_LIMIT_EXCEEDED in reasons
        ):
            action = rule.get("action", action)
            break
    return str(action)


def failure_verdict(
    policy: Mapping[str, Any] | None, rname: str, first: str, restarts: int
) -> tuple[str, str] | None:
    """The reason and message the JobSet fails with now that Job ``first`` of ``rname``
    failed, after ``restarts`` restarts; None when the failure policy restarts it."""
    if policy is None:
        return js.REASON_FAILED_JOBS, js.with_first_failed_job(js.MESSAGE_FAILED_JOBS, first)
    action = failure_action(policy, rname)
    if action == "FailJobSet":
        return js.REASON_FAIL_JOBSET_ACTION, js.with_first_failed_job(
            js.MESSAGE_FAIL_JOBSET_ACTION, first
        )
    counted = action == "RestartJobSet"
    if counted and restarts >= int(policy.get("maxRestarts") or 0):
        return js.REASON_REACHED_MAX_RESTARTS, js.with_first_failed_job(
            js.MESSAGE_REACHED_MAX_RESTARTS, first
        )
    return None


def succeeded(
    success_policy: Mapping[str, Any],
    rjob_names: Sequence[str],
    templates: Sequence[PodTemplate],
    rows: Rows,
    failures: Failures,
) -> bool:
    """Whether the success policy (``All``/``Any`` of its target replicatedJobs) is met."""
    operator = success_policy.get("operator", "All")
    targets = success_policy.get("targetReplicatedJobs") or rjob_names
    jobs = {(t.job, t.job_index) for t in templates if t.job in targets}
    states = [job_state(templates, rows, failures, r, j) == "Complete" for r, j in sorted(jobs)]
    return bool(states) and (any(states) if operator == "Any" else all(states))


def jobs_status(
    rjob_names: Sequence[str],
    templates: Sequence[PodTemplate],
    rows: Rows,
    failures: Failures,
    suspended: bool,
) -> list[dict[str, int | str]]:
    """``jobsStatus`` as JobSet's replicatedJobsStatus counts it: Jobs, not pods."""
    out: list[dict[str, int | str]] = []
    for rname in rjob_names:
        n = {"ready": 0, "succeeded": 0, "failed": 0, "active": 0, "suspended": 0}
        for j in sorted({t.job_index for t in templates if t.job == rname}):
            job_rows = [r for k, r in rows.items() if k[0] == rname and k[1] == j]
            state = job_state(templates, rows, failures, rname, j)
            if state == "Complete":
                n["succeeded"] += 1
                continue
            if state == "Failed":
                n["failed"] += 1
                continue
            running = sum(r.phase == st.POD_RUNNING for r in job_rows)
            ready_ = sum(r.phase == st.POD_RUNNING and r.ready for r in job_rows)
            succeeded_ = sum(r.phase == st.POD_SUCCEEDED for r in job_rows)
            n["suspended"] += int(suspended)
            n["active"] += int(running > 0)
            n["ready"] += int(bool(job_rows) and ready_ + succeeded_ >= len(job_rows))
        out.append({"name": rname, **n})
    return out
