"""``trainjob controller`` on the command line: help, and a clear error without a cluster."""

from __future__ import annotations

from pathlib import Path

import pytest

from trainjob.cli import main


def test_help_lists_the_controller_flags(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.setenv("TERMINAL_WIDTH", "200")
    assert main(["controller", "--help"]) == 0
    out = capsys.readouterr().out
    for flag in ("--kubeconfig", "--workers", "--metrics-port", "--health-port", "--leader-elect",
                 "--self-signed-webhooks", "--cert-management", "--webhook-host"):  # fmt: skip
        assert flag in out


def test_without_any_cluster_configuration_it_says_what_to_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert main(["controller", "--no-leader-elect"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: no Kubernetes configuration: pass --kubeconfig")


def test_a_missing_kubeconfig_file_is_reported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["controller", "--kubeconfig", str(tmp_path / "nope")]) == 1
    assert "cannot read kubeconfig" in capsys.readouterr().err


@pytest.mark.parametrize(
    "timings",
    [
        ("--lease-duration", "1", "--renew-deadline", "2"),
        ("--renew-deadline", "1", "--retry-period", "1"),
        ("--retry-period", "0"),
    ],
    ids=["a lease shorter than its renew deadline", "equal deadlines", "no retry period"],
)
def test_impossible_leader_election_timings_are_one_error_line(
    timings: tuple[str, ...], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["controller", "--kubeconfig", str(tmp_path / "nope"), *timings]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: leader election needs --lease-duration (")
    assert err.count("\n") == 1 and "Traceback" not in err
