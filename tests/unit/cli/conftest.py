"""A local home holding jobs, for the CLI's tests (no process started)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest


@pytest.fixture
def home_with_jobs(tmp_path: Path) -> Path:
    """A home holding two finished jobs and a live one (submitted a moment ago)."""
    from trainjob.local.state import home as homes
    from trainjob.local.state.store import JobRow, Store

    home = tmp_path / "home"
    store = Store(homes.db_path(home))
    now = time.time()
    for i, phase in enumerate(("Complete", "Failed", "Running")):
        name = f"job-{i}"
        tj = {
            "apiVersion": "trainer.kubeflow.org/v1alpha1",
            "kind": "TrainJob",
            "metadata": {
                "name": name,
                "namespace": "default",
                "uid": f"uid-{i}",
                "labels": {"team": "ml" if i != 1 else "infra"},
            },
            "spec": {"runtimeRef": {"name": "torch-distributed"}, "trainer": {"numNodes": 2}},
        }
        done = phase != "Running"
        status = {"conditions": [{"type": phase, "status": "True", "reason": "Done"}]}
        store.insert_job(
            JobRow(
                namespace="default", name=name, uid=f"uid-{i}", created="2026-01-01T00:00:00Z",
                created_ts=now - 10 + i, trainjob=json.dumps(tj), runtime="{}", plan="[]",
                cwd=str(tmp_path), phase=phase, status=json.dumps(status if done else {}),
                completed="2026-01-01T00:01:00Z" if done else None,
            )
        )  # fmt: skip
    return home
