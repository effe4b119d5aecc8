"""The error corpus: every malformed manifest in ``tests/unit/corpus/`` is rejected by ``trainjob plan``
with exit code 1, exactly the stderr in its ``.stderr`` file, nothing on stdout and no traceback,
and by ``trainjob run`` (the local backend) with the same lines and nothing stored: one validation
path for every entry point. ``tests/unit/corpus-local/`` holds what only the local backend refuses
(more than this machine runs): ``run`` gives the lines of their ``.stderr``.

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

from trainjob.cli import main
from trainjob.executor import catalog

CORPUS = Path(__file__).parent / "corpus"
CASES = sorted(p for p in CORPUS.iterdir() if p.suffix in (".yaml", ".json"))
CORPUS_LOCAL = Path(__file__).parent / "corpus-local"
LOCAL_CASES = sorted(p for p in CORPUS_LOCAL.iterdir() if p.suffix in (".yaml", ".json"))


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


def _run(case: Path, home: Path) -> tuple[int, str, str]:
    """``trainjob run -f CASE`` on the local backend in ``home``; nothing may be stored."""
    import contextlib
    import io

    from trainjob.local import LocalExecutor

    out, err = io.StringIO(), io.StringIO()
    old = os.environ.get("TRAINJOB_HOME")
    os.environ["TRAINJOB_HOME"] = str(home)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(["run", "-f", str(case)])
    finally:
        if old is None:
            del os.environ["TRAINJOB_HOME"]
        else:
            os.environ["TRAINJOB_HOME"] = old
    if (home / "trainjob.db").exists():
        ex = LocalExecutor(home)
        stored = ex.states(None, pods=False)
        for s in stored:  # stop what was wrongly started before failing
            ex.delete(s.name, s.namespace)
        assert stored == [], "run stored a job it should have refused"
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("case", CASES, ids=[c.stem for c in CASES])
def test_run_refuses_what_plan_refuses_with_the_same_lines(case: Path, tmp_path: Path) -> None:
    code, out, err = _run(case, tmp_path / "home")
    assert "Traceback" not in err
    assert (code, out) == (1, "")
    assert err == expected_stderr(case, str(case))


def test_local_corpus_is_complete() -> None:
    assert len(LOCAL_CASES) >= 5
    missing = [c.name for c in LOCAL_CASES if not c.with_suffix(".stderr").exists()]
    assert missing == []


@pytest.mark.parametrize("case", LOCAL_CASES, ids=[c.stem for c in LOCAL_CASES])
def test_run_refuses_what_this_machine_cannot_run(
    case: Path, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    from trainjob.local.client import limits

    machine = {  # what this machine has, as the messages say it
        f"at most {limits.max_procs_per_node()} on": "at most {limit} on",
        f"({os.cpu_count() or 1} CPUs)": "({cpus} CPUs)",
    }
    code, out, err = _run(case, tmp_path / "home")
    if request.config.getoption("--update-golden"):
        text = _generalise(err, str(case))
        for real, placeholder in machine.items():
            text = text.replace(real, placeholder)
        case.with_suffix(".stderr").write_text(text)
    assert "Traceback" not in err
    assert (code, out) == (1, "")
    want = expected_stderr(case, str(case))
    for real, placeholder in machine.items():
        want = want.replace(placeholder, real)
    assert err == want


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
