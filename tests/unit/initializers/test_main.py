"""``python -m trainjob.initializers``: one image for both of upstream's initializer images."""

from __future__ import annotations

import pytest

from trainjob.initializers import __main__ as main
from trainjob.initializers.config import Kind


@pytest.mark.parametrize(
    ("argv", "env", "want"),
    [
        (["model"], {"HOSTNAME": "j-dataset-initializer-0-0"}, Kind.MODEL),
        ([], {"TRAINJOB_INITIALIZER": "dataset"}, Kind.DATASET),
        ([], {"HOSTNAME": "tj-model-initializer-0-0"}, Kind.MODEL),
        ([], {"HOSTNAME": "tj-dataset-initializer-0-0"}, Kind.DATASET),
        ([], {"HOSTNAME": "tj-node-0-0"}, None),
        (["both"], {}, None),
    ],
)
def test_the_step_is_the_argument_the_env_or_the_pods_hostname(
    argv: list[str], env: dict[str, str], want: Kind | None
) -> None:
    assert main.which(argv, env) is want


def test_nothing_saying_which_is_a_one_line_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("HOSTNAME", "somewhere")
    monkeypatch.delenv("TRAINJOB_INITIALIZER", raising=False)
    assert main.main([]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: which initializer?") and err.count("\n") == 1
