"""A ``bash -c`` container that ends by running a launcher this machine lacks is refused before
the job starts, naming what to install: the SDK's CustomTrainer script on a base install
(``pip install trainjob`` without ``[torch]``) used to start, then fail with ``torchrun: command
not found`` in its log."""

from __future__ import annotations

from trainjob import extras
from trainjob.client import builder
from trainjob.client.runtimes import DEFAULT_COMMAND, MPI_COMMAND, TORCH_COMMAND
from trainjob.local.job.pods import script_launcher_missing

NOWHERE = "/nonexistent"  # a PATH with nothing on it


def script() -> list[str]:
    shell, flag, body = TORCH_COMMAND
    return [shell, flag, body.format(func_code="'print(1)'", func_file="f.py")]


def test_the_sdk_s_torch_script_without_torchrun_names_the_extra() -> None:
    said = script_launcher_missing(script(), NOWHERE)
    assert said == (
        "command 'torchrun' not found: install PyTorch: "
        f"pip install {extras.install_target(['torch'])} (or pip install torch)"
    )


def test_a_launcher_on_path_passes(tmp_path) -> None:  # type: ignore[no-untyped-def]
    torchrun = tmp_path / "torchrun"
    torchrun.write_text("#!/bin/sh\n")
    torchrun.chmod(0o755)
    assert script_launcher_missing(script(), str(tmp_path)) is None


def test_python_scripts_and_scripts_that_install_first_pass() -> None:
    shell, flag, body = DEFAULT_COMMAND
    assert script_launcher_missing([shell, flag, body], NOWHERE) is None
    installs = builder.venv_install_script(["torch"], ["https://pypi.org/simple"])
    shell, flag, body = TORCH_COMMAND
    assert script_launcher_missing([shell, flag, installs + body], NOWHERE) is None
    assert (
        script_launcher_missing(["bash", "-c", "pip install torch\ntorchrun t.py"], NOWHERE) is None
    )


def test_only_a_shell_s_script_is_read() -> None:
    assert script_launcher_missing(["torchrun", "train.py"], NOWHERE) is None  # resolve_command's
    assert script_launcher_missing(list(MPI_COMMAND), NOWHERE) is None  # mpirun itself: ditto
    assert (
        script_launcher_missing(["bash", "-c", "echo hi; torchrun t.py; echo done"], NOWHERE)
        is None
    )


def test_a_function_that_lists_packages_is_not_an_install() -> None:
    """``get_runtime_packages`` ships a function that runs ``pip list``: still refused."""
    shell, flag, body = TORCH_COMMAND
    code = '\'import subprocess; subprocess.run(["python", "-m", "pip", "list"])\''
    argv = [shell, flag, body.format(func_code=code, func_file="f.py")]
    assert script_launcher_missing(argv, NOWHERE) is not None
