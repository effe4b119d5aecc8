"""``trainjob controller`` on the command line: help, and a clear error without a cluster."""

from __future__ import annotations

import socket
import threading
import time
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


def unreachable_kubeconfig(tmp_path: Path) -> str:
    kc = tmp_path / "kubeconfig"
    kc.write_text(
        "apiVersion: v1\nkind: Config\n"
        "clusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]\n"
        "users: [{name: u, user: {token: t}}]\n"
        "contexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n"
    )
    return str(kc)


def test_a_port_in_use_is_one_error_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        code = main(
            ["controller", "--kubeconfig", unreachable_kubeconfig(tmp_path), "--no-leader-elect",
             "--bind-host", "127.0.0.1", "--health-port", "0", "--metrics-port", str(port)]
        )  # fmt: skip
    assert code == 1
    err = capsys.readouterr().err
    assert f"error: cannot serve metrics on 127.0.0.1:{port}: Address already in use\n" in err
    assert "Traceback" not in err

    # What had started (the health server, informers) was stopped again.
    def leftovers() -> list[str]:
        return [t.name for t in threading.enumerate() if t.name.startswith(("http-", "informer-"))]

    deadline = time.monotonic() + 10
    while leftovers() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert leftovers() == []


def test_a_cert_dir_without_certificates_is_one_error_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        ["controller", "--kubeconfig", unreachable_kubeconfig(tmp_path), "--no-leader-elect",
         "--bind-host", "127.0.0.1", "--health-port", "0", "--metrics-port", "0",
         "--webhook-host", "127.0.0.1", "--webhook-port", "0", "--cert-dir", str(tmp_path / "none")]
    )  # fmt: skip
    assert code == 1
    err = capsys.readouterr().err
    assert (
        "error: cannot load the webhook certificate (tls.crt, tls.key) from --cert-dir "
        f"{tmp_path / 'none'}: No such file or directory\n"
    ) in err
    assert "Traceback" not in err
