"""A Plan's JobSet as pod templates: the pods the JobSet and Job controllers would create.

Each replicatedJob has ``replicas`` Jobs of ``parallelism`` pods with completion indexes; names,
labels and annotations are the ones the controllers give them. Also the types of a pod as it
runs here (:class:`LocalPod`, :class:`LocalContainer`) and :class:`PodConfigError`. Pure; used
through :mod:`trainjob.local.job.pods`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from trainjob.core import jobset
from trainjob.local.job import probes
from trainjob.runtime.plan import Plan

Obj = dict[str, Any]

_SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


class PodConfigError(Exception):
    """A pod cannot run on this machine (no command, command not installed, missing key)."""


@dataclass(frozen=True)
class PodTemplate:
    """One pod of the JobSet before it is mapped onto this machine."""

    job: str
    job_index: int
    index: int
    hostname: str
    name: str
    labels: Mapping[str, str]
    annotations: Mapping[str, str]
    spec: Obj
    depends_on: tuple[tuple[str, str], ...] = ()
    backoff_limit: int = 0


@dataclass(frozen=True)
class LocalContainer:
    name: str
    argv: tuple[str, ...]
    env: Mapping[str, str]
    cwd: str
    probes: probes.ContainerProbes | None = None


@dataclass(frozen=True)
class LocalPod:
    template: PodTemplate
    init_containers: tuple[LocalContainer, ...]
    containers: tuple[LocalContainer, ...]


def _suffix(*parts: object) -> str:
    digest = hashlib.sha256("/".join(map(str, parts)).encode()).digest()
    return "".join(_SUFFIX_ALPHABET[b % len(_SUFFIX_ALPHABET)] for b in digest[:5])


def subdomain(plan: Plan) -> str:
    js = plan.jobset
    network = js.get("spec", {}).get("network") or {}
    return str(network.get("subdomain") or js["metadata"]["name"])


def pod_templates(plan: Plan, uid: str, restarts: int = 0) -> list[PodTemplate]:
    """Every pod of the Plan's JobSet, replicatedJobs in order, as the controllers name them."""
    js = plan.jobset
    js_name = js["metadata"]["name"]
    namespace = js["metadata"].get("namespace") or "default"
    out: list[PodTemplate] = []
    global_index = 0
    for rjob in js.get("spec", {}).get("replicatedJobs") or ():
        rname = rjob["name"]
        replicas = int(rjob.get("replicas") or 1)
        job_tmpl = rjob.get("template") or {}
        job_spec = job_tmpl.get("spec") or {}
        pod_tmpl = job_spec.get("template") or {}
        pod_meta = pod_tmpl.get("metadata") or {}
        parallelism = int(job_spec.get("parallelism") or 1)
        deps = tuple((d["name"], d["status"]) for d in rjob.get("dependsOn") or ())
        for j in range(replicas):
            job_name = f"{js_name}-{rname}-{j}"
            key = hashlib.sha1(f"{namespace}/{job_name}".encode()).hexdigest()
            common = {
                jobset.LABEL_JOBSET_NAME: js_name,
                jobset.LABEL_JOBSET_UID: uid,
                jobset.LABEL_REPLICATED_JOB_NAME: rname,
                jobset.LABEL_REPLICATED_JOB_REPLICAS: str(replicas),
                jobset.LABEL_JOB_INDEX: str(j),
                jobset.LABEL_JOB_GLOBAL_INDEX: str(global_index),
                jobset.LABEL_JOB_KEY: key,
                jobset.LABEL_RESTART_ATTEMPT: str(restarts),
            }
            global_index += 1
            for i in range(parallelism):
                labels = {
                    **(job_tmpl.get("metadata") or {}).get("labels", {}),
                    **(pod_meta.get("labels") or {}),
                    **common,
                    jobset.LABEL_JOB_NAME: job_name,
                    jobset.LABEL_COMPLETION_INDEX: str(i),
                }
                annotations = {
                    **(pod_meta.get("annotations") or {}),
                    **common,
                    jobset.LABEL_COMPLETION_INDEX: str(i),
                }
                hostname = f"{job_name}-{i}"
                out.append(
                    PodTemplate(
                        job=rname,
                        job_index=j,
                        index=i,
                        hostname=hostname,
                        name=f"{hostname}-{_suffix(uid, restarts, hostname)}",
                        labels=labels,
                        annotations=annotations,
                        spec=pod_tmpl.get("spec") or {},
                        depends_on=deps,
                        backoff_limit=int(job_spec.get("backoffLimit") or 0),
                    )
                )
    return out
