"""``trainjob get runtimes`` reads the runtimes as plain objects (no YAML, no pydantic): the
built-in ones from a JSON copy of their files in the home (catalog.builtin_documents), the
stored ones as stored. What it prints must be what the API models print, and the copy must be
used only while it is the copy of these files."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from trainjob.api.base import to_dict
from trainjob.cli import TARGET, Backend, listing
from trainjob.executor import catalog
from trainjob.executor.base import Executor
from trainjob.local.client.executor import LocalExecutor
from trainjob.local.state import home as homes


def _stored(home: Path) -> LocalExecutor:
    """A home whose store holds a runtime in place of a built-in one and a TrainingRuntime."""
    ex = LocalExecutor(home)
    torch = copy.deepcopy(catalog.builtin_documents()[3])
    torch["metadata"]["labels"]["trainer.kubeflow.org/framework"] = "torch-custom"
    torch["spec"]["mlPolicy"]["numNodes"] = 4
    ex.store.put_runtime("ClusterTrainingRuntime", "", "torch-distributed", torch)
    team = {**copy.deepcopy(torch), "kind": "TrainingRuntime"}
    team["metadata"] = {**team["metadata"], "name": "team", "namespace": "other"}
    ex.store.put_runtime("TrainingRuntime", "other", "team", team)
    return ex


@pytest.mark.parametrize("namespace", [None, "default", "other"])
def test_the_plain_objects_are_the_models_runtimes(tmp_path: Path, namespace: str | None) -> None:
    ex = _stored(tmp_path / "home")
    models = [to_dict(r) for r in ex.list_runtimes(namespace)]
    objects = ex.runtime_objects(namespace)
    names = [(o["kind"], o["metadata"]["name"]) for o in objects]
    assert names == [(m["kind"], m["metadata"]["name"]) for m in models]
    assert ("TrainingRuntime", "team") in names if namespace in (None, "other") else True
    for o, m in zip(objects, models, strict=True):
        assert o["metadata"]["labels"] == m["metadata"]["labels"]
        assert (o["spec"].get("mlPolicy") or {}).get("numNodes") == (
            (m["spec"].get("mlPolicy") or {}).get("numNodes")
        )
        assert listing.runtime_images(o) == listing.runtime_images(m)


@pytest.mark.parametrize("output", [None, "wide"])
def test_the_table_reads_as_the_models_table(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    output: str | None,
) -> None:
    home = tmp_path / "home"
    _stored(home)
    monkeypatch.setenv("TRAINJOB_HOME", str(home))
    monkeypatch.setattr(TARGET, "backend", Backend.local)
    listing.list_runtimes(None, None, output, False)
    plain = capsys.readouterr().out
    monkeypatch.setattr(LocalExecutor, "runtime_objects", Executor.runtime_objects)
    listing.list_runtimes(None, None, output, False)  # from the API models' dicts
    assert capsys.readouterr().out == plain
    assert "torch-custom" in plain and "mpi-distributed" in plain


def test_the_copy_is_written_then_read(tmp_path: Path) -> None:
    files = catalog.builtin_documents()
    assert catalog.builtin_documents(tmp_path) == files
    copied = tmp_path / catalog.CACHE_FILE
    data: dict[str, Any] = json.loads(copied.read_text())
    assert data["runtimes"] == files and oct(copied.stat().st_mode & 0o777) == "0o600"
    data["runtimes"] = [{"kind": "ClusterTrainingRuntime", "metadata": {"name": "from-copy"}}]
    copied.write_text(json.dumps(data))
    assert catalog.builtin_documents(tmp_path) == data["runtimes"]  # the copy is what is read


@pytest.mark.parametrize(
    "damage",
    [
        lambda d: {**d, "key": [*d["key"][:-1], ["torch-distributed.yaml", 1, 1]]},  # other files
        lambda d: {**d, "key": [0, *d["key"][1:]]},  # another layout
        lambda d: "not json {",
        lambda d: [],
    ],
    ids=["stale", "layout", "garbled", "not-an-object"],
)
def test_a_copy_not_of_these_files_is_made_again(tmp_path: Path, damage: Any) -> None:
    files = catalog.builtin_documents()
    catalog.builtin_documents(tmp_path)
    copied = tmp_path / catalog.CACHE_FILE
    bad = damage(json.loads(copied.read_text()))
    if isinstance(bad, dict):
        bad["runtimes"] = []
    copied.write_text(bad if isinstance(bad, str) else json.dumps(bad))
    assert catalog.builtin_documents(tmp_path) == files
    assert json.loads(copied.read_text())["runtimes"] == files  # written again


def test_a_cache_that_cannot_be_written_still_lists(tmp_path: Path) -> None:
    assert catalog.builtin_documents(tmp_path / "missing") == catalog.builtin_documents()
    assert not (tmp_path / "missing").exists()


def test_the_local_executor_keeps_the_copy_in_its_home(tmp_path: Path) -> None:
    ex = LocalExecutor(tmp_path / "home")
    names = [o["metadata"]["name"] for o in ex.runtime_objects()]
    assert names == list(catalog.builtin_runtimes())
    cache = homes.cache_dir(tmp_path / "home")
    assert (cache / catalog.CACHE_FILE).is_file() and oct(cache.stat().st_mode & 0o777) == "0o700"
