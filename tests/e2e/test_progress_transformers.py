"""transformers' own ``KubeflowCallback`` (transformers >= 4.57) against the local backend's real
status server: with the env a trainjob trainer pod gets, it verifies TLS with the job's CA, sends
the job's token and its reports are accepted, as it does in a user's own Trainer. (The built-in
LLM trainer puts trainjob's reporter in its place, which never throttles away a run's first loss
or its last report: tests/unit/progress/test_reporting.py, tests/e2e/test_llm_table_stakes.py.)"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from trainjob.local.job import statusserver

pytestmark = pytest.mark.e2e
transformers = pytest.importorskip("transformers")


def test_kubeflow_callback_reports_to_a_local_jobs_status_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from transformers import TrainerControl, TrainerState, TrainingArguments
    from transformers.integrations.integration_utils import KubeflowCallback

    updates: list[dict[str, Any]] = []
    creds = statusserver.credentials(tmp_path / "job")
    server = statusserver.StatusServer("default", "job", creds, updates.append)
    try:
        for k, v in statusserver.pod_env(server.url, creds).items():
            monkeypatch.setenv(k, v)
        monkeypatch.delenv("DISABLE_KUBEFLOW_INTEGRATION", raising=False)
        callback = KubeflowCallback()  # type: ignore[no-untyped-call]
        args = TrainingArguments(output_dir=str(tmp_path / "out"), report_to="none")
        state = TrainerState(max_steps=4)
        control = TrainerControl()
        callback.on_train_begin(args, state, control)  # type: ignore[no-untyped-call]
        state.global_step = 4
        callback._last_update_time = 0.0  # past its throttle
        callback.on_train_end(args, state, control)  # type: ignore[no-untyped-call]
    finally:
        server.stop()
    assert updates, "the callback sent nothing"
    assert updates[-1]["progressPercentage"] == 100
    assert server.refused == 0
