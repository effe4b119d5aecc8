"""``packages_to_install`` on the local backend: a virtual environment of the job, not the caller's.

The command the builder makes for the local backend (``builder.build(..., venv=...)``) runs here
with bash, as a local pod runs it: the package (a wheel made in the test, with a dependency the
caller has, PyYAML) goes into ``$TRAINJOB_JOB_TMP/venv.*``; the function imports it and PyYAML from
the caller's environment (the index is empty, so a second PyYAML could not be installed); the
caller's environment is unchanged; the environment is removed when the process ends, or kept with
``cleanup_venv=False``.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import os
import subprocess
import sys
import zipfile
from pathlib import Path

from tests.unit.client import shippable as s
from trainjob.client import builder, types

PROBE = "trainjob_probe_pkg"


def wheel(where: Path) -> Path:
    """A pure-Python wheel of ``trainjob_probe_pkg`` 1.0 that requires PyYAML."""
    dist = f"{PROBE}-1.0.dist-info"
    files = {
        f"{PROBE}/__init__.py": "VALUE = 42\n",
        f"{dist}/METADATA": (
            f"Metadata-Version: 2.1\nName: {PROBE}\nVersion: 1.0\nRequires-Dist: PyYAML\n"
        ),
        f"{dist}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = []
    for name, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=")
        record.append(f"{name},sha256={digest.decode()},{len(text.encode())}")
    record.append(f"{dist}/RECORD,,")
    path = where / f"{PROBE}-1.0-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as z:
        for name, text in files.items():
            z.writestr(name, text)
        z.writestr(f"{dist}/RECORD", "\n".join(record) + "\n")
    return path


def command(tmp_path: Path, cleanup: bool) -> list[str]:
    (tmp_path / "index").mkdir()
    trainer = types.CustomTrainer(
        func=s.train_imports_probe,
        packages_to_install=[str(wheel(tmp_path))],
        pip_index_urls=[(tmp_path / "index").as_uri()],
    )
    rt = types.RuntimeTrainer(types.TrainerType.CUSTOM_TRAINER, "python", "img")
    from trainjob.client import runtimes

    rt.set_command(runtimes.DEFAULT_COMMAND)
    job = builder.build(types.Runtime("rt", rt), trainer=trainer, venv=cleanup)
    return list(job["spec"]["trainer"]["command"])


def run(cmd: list[str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"])
    env[builder.JOB_TMP_ENV] = str(tmp_path / "job-tmp")
    env.pop("PYTHONPATH", None)
    return subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)


def test_packages_go_into_a_venv_of_the_job_that_reuses_the_callers_packages(
    tmp_path: Path,
) -> None:
    out = run(command(tmp_path, cleanup=False), tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr
    said = dict(line.split(" ", 1) for line in out.stdout.splitlines() if " " in line)
    venvs = str(tmp_path / "job-tmp" / "venv.")
    assert "Successfully installed Python packages (into this job's virtual environment" in (
        out.stdout
    )
    assert venvs in out.stdout.split("virtual environment ", 1)[1]  # says where
    assert said["probe"].startswith("42 " + venvs)
    import yaml

    assert said["yaml"] == yaml.__file__  # the caller's PyYAML, not a second copy
    assert importlib.util.find_spec(PROBE) is None  # the caller's environment is unchanged
    # cleanup_venv=False: kept until the job (and its tmp/) is deleted
    left = sorted(p.name for p in (tmp_path / "job-tmp").iterdir())
    assert len(left) == 2 and left[0].startswith("venv.") and left[1].endswith(".pip.log")
    assert "Keeping the virtual environment" in out.stdout


def test_a_failed_install_says_so_and_removes_the_venv(tmp_path: Path) -> None:
    (tmp_path / "index").mkdir()
    trainer = types.CustomTrainer(
        func=s.train_no_args,
        packages_to_install=["no-such-package-zz"],
        pip_index_urls=[(tmp_path / "index").as_uri()],
    )
    rt = types.RuntimeTrainer(types.TrainerType.CUSTOM_TRAINER, "python", "img")
    rt.set_command(("bash", "-c", "true {func_file}"))
    job = builder.build(types.Runtime("rt", rt), trainer=trainer, venv=True)
    out = run(job["spec"]["trainer"]["command"], tmp_path)
    assert out.returncode == 1
    assert "ERROR: Failed to install Python packages: no-such-package-zz" in out.stderr
    assert "no-such-package-zz" in out.stderr.split("\n", 1)[1]  # pip's own words follow
    assert list((tmp_path / "job-tmp").iterdir()) == []  # cleanup_venv: removed at exit


def test_kubernetes_keeps_upstreams_install_into_the_container() -> None:
    trainer = types.CustomTrainer(func=s.train_no_args, packages_to_install=["x"])
    rt = types.RuntimeTrainer(types.TrainerType.CUSTOM_TRAINER, "python", "img")
    from trainjob.client import runtimes

    rt.set_command(runtimes.DEFAULT_COMMAND)
    job = builder.build(types.Runtime("rt", rt), trainer=trainer)
    script = job["spec"]["trainer"]["command"][-1]
    assert "--user" in script and "venv" not in script
