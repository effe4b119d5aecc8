"""The error corpus: every malformed manifest in ``tests/unit/corpus/`` is rejected by ``trainjob plan``
with exit code 1, exactly the stderr in its ``.stderr`` file, nothing on stdout and no traceback.

Each ``NAME.yaml`` (or ``.json``) opens with a comment saying what is wrong with it (the test id).
``NAME.stderr`` is byte-exact kubectl-style output, with ``{file}`` standing for the path given to
``-f`` and ``{builtins}`` for the names of the built-in runtimes. ``pytest --update-golden`` rewrites
the ``.stderr`` files; read the diff before committing it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from trainjob import catalog
from trainjob.cli import main

CORPUS = Path(__file__).parent / "corpus"
CASES = sorted(p for p in CORPUS.iterdir() if p.suffix in (".yaml", ".json"))


def _builtins() -> str:
    return ", ".join(sorted(catalog.builtin_runtimes()))


def expected_stderr(case: Path, file_arg: str) -> str:
    text = case.with_suffix(".stderr").read_text()
    return text.replace("{file}", file_arg).replace("{builtins}", _builtins())


def _generalise(stderr: str, file_arg: str) -> str:
    return stderr.replace(_builtins(), "{builtins}").replace(file_arg, "{file}")


def test_corpus_is_large_and_complete() -> None:
    assert len(CASES) >= 40
    missing = [c.name for c in CASES if not c.with_suffix(".stderr").exists()]
    orphans = [s.name for s in CORPUS.glob("*.stderr") if not any(c.stem == s.stem for c in CASES)]
    assert (missing, orphans) == ([], [])


@pytest.mark.parametrize("case", CASES, ids=[c.stem for c in CASES])
def test_plan_rejects_malformed_input_with_exact_kubectl_lines(
    case: Path, capsys: pytest.CaptureFixture[str], request: pytest.FixtureRequest
) -> None:
    file_arg = str(case)
    code = main(["plan", "-f", file_arg])
    out, err = capsys.readouterr()
    if request.config.getoption("--update-golden"):
        case.with_suffix(".stderr").write_text(_generalise(err, file_arg))
    assert "Traceback" not in err
    assert (code, out) == (1, "")
    assert err == expected_stderr(case, file_arg)


def _console_script() -> str:
    script = Path(sys.executable).parent / "trainjob"
    found = str(script) if script.exists() else shutil.which("trainjob")
    assert found, "the trainjob console script is not installed (pip install -e .)"
    return found


def test_console_script_reads_stdin_and_prints_the_same_lines() -> None:
    case = CORPUS / "many-errors-in-one-trainjob.yaml"
    proc = subprocess.run(
        [_console_script(), "plan", "-f", "-"],
        input=case.read_text(),
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "NO_COLOR": "1"},
    )
    assert "Traceback" not in proc.stderr
    assert (proc.returncode, proc.stdout) == (1, "")
    assert proc.stderr == expected_stderr(case, "STDIN")
    assert proc.stderr.splitlines()[0] == 'The TrainJob "Bad_Job" is invalid: '
