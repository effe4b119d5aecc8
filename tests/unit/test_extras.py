"""A missing optional extra is named before work starts, as one line, never a traceback.

Each case runs the real entry point in a fresh interpreter where the module is made unimportable
(``sys.modules[name] = None``, what ``import`` then refuses): the initializers with ``hf://`` and
``s3://``, the LLM trainer (``tune run``'s stand-in) and its demo; and the local backend's
preflight refuses such a job at submit, before any process starts.
"""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys
from pathlib import Path

import pytest

from trainjob import extras
from trainjob.api.load import parse
from trainjob.api.trainer import TrainJob
from trainjob.errors import ConfigError
from trainjob.local import LocalExecutor


def run_without(modules: list[str], code: str, env: dict[str, str] | None = None):  # type: ignore[no-untyped-def]
    block = "".join(f"sys.modules[{m!r}] = None; " for m in modules)
    return subprocess.run(
        [sys.executable, "-c", f"import sys; {block}\n{code}"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )


@pytest.mark.parametrize(
    ("uri", "module", "want"),
    [
        pytest.param(
            "hf://org/model",
            "huggingface_hub",
            "error: STORAGE_URI: downloading from hf:// needs huggingface_hub, which is not installed "
            f"here: pip install {extras.install_target(['initializers'])}",
            id="hf:// without huggingface_hub",
        ),
        pytest.param(
            "s3://bucket/model",
            "boto3",
            "error: STORAGE_URI: downloading from s3:// needs boto3, which is not installed here: "
            f"pip install {extras.install_target(['initializers'])}",
            id="s3:// without boto3",
        ),
    ],
)
def test_an_initializer_names_the_extra_its_scheme_needs(
    tmp_path: Path, uri: str, module: str, want: str
) -> None:
    import os

    env = dict(os.environ, STORAGE_URI=uri, OUTPUT_PATH=str(tmp_path / "out"))
    out = run_without(
        [module], "from trainjob.initializers import model; sys.exit(model.main())", env
    )
    assert out.returncode == 1
    assert out.stderr.strip().splitlines() == [want]
    assert "Traceback" not in out.stderr


def test_the_llm_trainer_names_the_llm_extra() -> None:
    out = run_without(
        ["transformers", "peft"],
        "from trainjob.trainers.llm import launch; sys.exit(launch.main(['run', 'x']))",
    )
    assert out.returncode == 1
    assert out.stderr.strip() == (
        "error: the LLM trainer (tune run) needs transformers, peft, which are not installed "
        f"here: pip install {extras.install_target(['llm'])}"
    )


def test_the_llm_demo_names_the_llm_extra(tmp_path: Path) -> None:
    out = run_without(
        ["transformers"],
        f"from trainjob.trainers.llm import demo; sys.exit(demo.main([{str(tmp_path)!r}]))",
    )
    assert out.returncode == 1
    assert out.stderr.strip() == (
        "error: the LLM demo needs transformers, which is not installed here: "
        f"pip install {extras.install_target(['llm'])}"
    )
    assert list(tmp_path.iterdir()) == []


def test_install_hint_groups_extras_and_names_other_packages() -> None:
    assert extras.install_hint(["torch", "boto3", "peft"]) == (
        f"pip install {extras.installed_from()}[initializers,llm,torch]'"
    )
    assert extras.install_hint(["deepspeed"]) == "pip install deepspeed"
    assert extras.missing(["json", "no_such_module_zz"]) == ["no_such_module_zz"]


def test_every_extra_named_is_one_of_pyproject() -> None:
    import tomllib

    pyproject = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())
    declared = set(pyproject["project"]["optional-dependencies"])
    assert set(extras.EXTRA_OF.values()) <= declared
    for module, extra in extras.EXTRA_OF.items():
        deps = " ".join(pyproject["project"]["optional-dependencies"][extra]).lower()
        assert module.replace("_", "-") in deps.replace("_", "-"), (module, extra)


def test_the_local_backend_refuses_a_job_whose_initializer_lacks_its_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "huggingface_hub", None)
    tj = parse(
        {
            "apiVersion": "trainer.kubeflow.org/v1alpha1",
            "kind": "TrainJob",
            "metadata": {"name": "llm"},
            "spec": {
                "runtimeRef": {"name": "torchtune-llama3.2-1b"},
                "initializer": {"model": {"storageUri": "hf://meta-llama/Llama-3.2-1B"}},
            },
        }
    )
    assert isinstance(tj, TrainJob)
    ex = LocalExecutor(tmp_path / "home")
    with pytest.raises(ConfigError) as info:
        ex.submit(tj, cwd=str(tmp_path))
    assert "STORAGE_URI 'hf://meta-llama/Llama-3.2-1B' needs huggingface_hub" in str(info.value)
    assert f"pip install {extras.install_target(['initializers'])}" in str(info.value)
    assert ex.states() == []  # nothing stored, nothing started


@pytest.mark.parametrize(
    ("direct_url", "want"),
    [
        pytest.param(
            '{"url": "file:///home/me/dist/trainjob-0.1.0-py3-none-any.whl", "archive_info": {}}',
            "pip install '/home/me/dist/trainjob-0.1.0-py3-none-any.whl[dashboard]'",
            id="a wheel",
        ),
        pytest.param(
            '{"url": "file:///home/me/trainjob", "dir_info": {"editable": true}}',
            "pip install -e '/home/me/trainjob[dashboard]'",
            id="an editable checkout",
        ),
        pytest.param(
            None, "pip install 'trainjob-0.1.0-py3-none-any.whl[dashboard]'", id="unknown"
        ),
    ],
)
def test_the_hint_names_what_this_install_came_from_not_a_registry_package(
    direct_url: str | None, want: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """trainjob is not on PyPI: ``pip install 'trainjob[dashboard]'`` would find nothing (or
    someone else's package), so the hint names the wheel or checkout this install came from."""
    info = tmp_path / "trainjob-0.1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: trainjob\nVersion: 0.1.0\n")
    if direct_url is not None:
        (info / "direct_url.json").write_text(direct_url)
    dist = importlib.metadata.PathDistribution(info)
    monkeypatch.setattr(importlib.metadata, "distribution", lambda name: dist)
    extras.installed_from.cache_clear()
    try:
        assert extras.install_hint(["starlette", "uvicorn"]) == want
    finally:
        extras.installed_from.cache_clear()


def test_the_dashboard_without_its_extra_names_the_install_it_came_from() -> None:
    out = run_without(
        ["starlette"],
        "from trainjob.cli import main; sys.argv = ['trainjob', 'dashboard']; sys.exit(main())",
    )
    assert out.returncode != 0
    assert out.stderr.strip().splitlines()[-1] == (
        "error: trainjob dashboard needs starlette, which is not installed here: "
        f"pip install {extras.install_target(['dashboard'])}"
    ), out.stderr
    assert "Traceback" not in out.stderr


def test_the_llm_demo_refuses_a_shared_folder_it_does_not_own(tmp_path: Path) -> None:
    """/tmp/trainjob-llm-demo (the docs' folder) is in a shared /tmp: another user's folder, or a
    link planted there, is refused, not written into (the job would read that user's model)."""
    import os

    from trainjob.trainers.llm import demo

    link = tmp_path / "link"
    link.symlink_to(tmp_path)
    assert demo.main([str(link)]) == 1
    assert not (tmp_path / "model").exists()
    if os.getuid() == 0:  # root can make a folder another user owns
        theirs = tmp_path / "theirs"
        theirs.mkdir()
        os.chown(theirs, 65534, 65534)
        assert demo.main([str(theirs)]) == 1
        assert list(theirs.iterdir()) == []
