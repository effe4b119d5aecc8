"""docs/cli.md is the CLI as it is: generated from the commands, regenerated when they change."""

from __future__ import annotations

from pathlib import Path

from trainjob.cli import reference

REPO = Path(__file__).resolve().parents[3]


def test_the_cli_reference_is_current() -> None:
    page = REPO / "docs" / "cli.md"
    assert page.read_text() == reference.render(), (
        "docs/cli.md is stale: run `python -m trainjob.cli.reference`"
    )


def test_every_command_has_a_section_with_its_options() -> None:
    text = reference.render()
    for command in ("run", "get jobs", "get runtimes", "describe job", "logs", "delete", "crds"):
        assert f"## `trainjob {command}`" in text, command
    assert "| `-n`, `--namespace NAMESPACE` |" in text and "<str>" not in text
