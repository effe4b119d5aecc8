"""Step names: how a pod of a TrainJob's JobSet is named to a user (``node-1``,
``dataset-initializer``, ``launcher-0``, ``node-1-0`` for a second Job of a replicatedJob).

One rule for every front end that prints or takes a step (the CLI's ``--step``, tables, log
prefixes; the dashboard). The SDK keeps upstream's own step names on top of the same pods
(:mod:`trainjob.client.steps`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from trainjob.executor.model import JobState

DATASET_INITIALIZER = "dataset-initializer"
MODEL_INITIALIZER = "model-initializer"
LAUNCHER = "launcher"
NODE = "node"


def step_name(job: str, index: int, job_index: int = 0) -> str:
    """``node-1``; an initializer's job name alone; ``job-J-I`` for the J-th Job of a
    replicatedJob with several replicas."""
    if job_index:
        return f"{job}-{job_index}-{index}"
    if job in (DATASET_INITIALIZER, MODEL_INITIALIZER) and index == 0:
        return job
    return f"{job}-{index}"


def parse_step(step: str, known: Iterable[tuple[str, int, int]]) -> tuple[str, int, int]:
    """``node-1`` -> (node, 1, 0); a bare job name -> its pod 0; ``job-J-I`` when known."""
    for job, index, job_index in known:
        if step in (step_name(job, index, job_index), f"{job}-{job_index}-{index}"):
            return job, index, job_index
    m = re.fullmatch(r"(.+?)-(\d+)", step)
    if m:
        return m.group(1), int(m.group(2)), 0
    return step, 0, 0


def default_step(s: JobState) -> tuple[str, int, int]:
    """The trainer's first pod that runs: ``node-0``, or ``launcher-0`` for MPI."""
    running = [p for p in s.pods if p.runs]
    for job in (LAUNCHER, NODE):
        for p in running:
            if p.job == job:
                return p.step
    if running:
        return running[0].step
    return NODE, 0, 0
