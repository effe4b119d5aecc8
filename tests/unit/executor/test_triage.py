"""The first failure of a job: which pod, how (exit code, signal, OOMKilled), its last lines."""

from __future__ import annotations

from trainjob.executor import model as st
from trainjob.executor import triage


def _state(*pods: st.PodState, phase: str = st.FAILED) -> st.JobState:
    return st.JobState("j", "ns", phase, "2026-12-01T00:00:00Z", pods=pods)


def _pod(
    index: int, finished: str, code: int | None, message: str = "", job: str = "node"
) -> st.PodState:
    return st.PodState(job, index, f"j-{job}-0-{index}", st.POD_FAILED, code, finished=finished,
                       message=message)  # fmt: skip


def test_the_first_to_finish_with_an_exit_code_is_named_with_its_rank_and_signal() -> None:
    stopped = _pod(0, "2026-12-01T00:00:05Z", None)  # stopped because of rank 1
    killed = _pod(1, "2026-12-01T00:00:03Z", 137, 'container "node" failed: exit code 137')
    later = _pod(2, "2026-12-01T00:00:04Z", 1, "container failed; its log says: ValueError: x")
    f = triage.failure(_state(stopped, killed, later), lambda p: ["a", "", "b\x1b[31m!\x07"])
    assert f is not None
    assert (f.step, f.rank, f.exit_code, f.signal) == ("node-1", 1, 137, "SIGKILL")
    assert f.summary().startswith("step node-1 (rank 1) failed first: exit code 137 (SIGKILL")
    assert f.tail == ("a", "b!\\x07"), "escapes dropped, control characters escaped"
    assert "last lines of node-1's log:\n  a\n  b!" in f.report()


def test_oomkilled_on_a_cluster_and_what_the_log_says() -> None:
    pod = _pod(0, "t", 137, "OOMKilled")
    f = triage.failure(_state(pod))
    assert f is not None and f.oom and "OOMKilled: out of memory" in f.summary()
    said = _pod(0, "t", 1, 'container "node" failed: exit code 1; its log says: KeyError: \x1b[1mk')
    f = triage.failure(_state(said))
    assert f is not None and f.summary().endswith("its log says: KeyError: k")


def test_no_failure_unless_failed_and_a_log_that_cannot_be_read_is_no_tail() -> None:
    pod = _pod(0, "t", 1, "x", job="dataset-initializer")
    assert triage.failure(_state(pod, phase=st.RUNNING)) is None
    assert triage.failure(_state()) is None

    def gone(p: st.PodState) -> list[str]:
        raise OSError("no log")

    f = triage.failure(_state(pod), gone)
    assert f is not None and f.tail == () and f.rank is None and f.step == "dataset-initializer"
    assert triage.says_first_failed("jobset failed; first failed: node-1 (rank 1): x")
