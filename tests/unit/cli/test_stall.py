"""``run --follow`` / ``--wait`` on a cluster where nothing acts on the job says so, once, with the
commands that check: no status at all (no trainjob or upstream controller), or a JobSet's status
but no pods (no JobSet controller). The local backend never says it (its supervisor is the
controller). The executor here is a stand-in that reports fixed states: what is pinned is the rule
in :class:`trainjob.cli.run.Stall`, not a cluster."""

from __future__ import annotations

from typing import Any

import pytest

from trainjob.cli import run
from trainjob.executor import model as st
from trainjob.executor.model import JobState, PodState


class Frozen:
    """An executor whose job stays as it is for ``polls`` polls, then completes."""

    poll_interval = 0.0

    def __init__(
        self, backend: str, trainjob: dict[str, Any], pods: tuple[PodState, ...] = ()
    ) -> None:
        self.backend, self.trainjob, self.pods = backend, trainjob, pods
        self.polls = 0

    def state(self, name: str, namespace: str) -> JobState:
        self.polls += 1
        phase = st.COMPLETE if self.polls > 5 else st.CREATED
        return JobState(name, namespace, phase, "", pods=self.pods, trainjob=self.trainjob)


def follow(ex: Frozen, capsys: pytest.CaptureFixture[str]) -> str:
    run.watch(ex, "tj", "ns")  # type: ignore[arg-type]
    return capsys.readouterr().err


@pytest.fixture(autouse=True)
def at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(run.Stall, "AFTER", 0.0)


def test_no_status_names_the_missing_controller_once(capsys: pytest.CaptureFixture[str]) -> None:
    said = follow(Frozen("kubernetes", {"metadata": {"name": "tj"}}), capsys)
    assert said.count("warning: no controller has acted on TrainJob ns/tj") == 1
    assert "kubectl get pods -n trainjob-system" in said
    assert "Ctrl-C stops watching" in said


def test_a_status_without_pods_names_the_jobset_controller(
    capsys: pytest.CaptureFixture[str],
) -> None:
    tj = {"status": {"conditions": [{"type": "Created", "status": "True"}]}}
    said = follow(Frozen("kubernetes", tj), capsys)
    assert said.count("warning: TrainJob ns/tj has no pods") == 1
    assert "kubectl get pods -n jobset-system" in said


def test_pods_or_the_local_backend_say_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    pod = PodState(job="node", index=0, name="tj-node-0-0")
    assert "warning" not in follow(Frozen("kubernetes", {}, (pod,)), capsys)
    assert "warning" not in follow(Frozen("local", {}), capsys)


def test_not_before_its_time(capsys: pytest.CaptureFixture[str], monkeypatch: Any) -> None:
    monkeypatch.setattr(run.Stall, "AFTER", 3600.0)
    assert "warning" not in follow(Frozen("kubernetes", {}), capsys)
