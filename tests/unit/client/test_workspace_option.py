"""``train(options=[Workspace(DIR)])``: the folder is packed when the option is applied, the
TrainJob records the snapshot (after any ``Annotations`` option too), and a bad folder is the
SDK's ValueError in one line."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.unit.client.test_builder import runtime
from trainjob import Annotations, Workspace
from trainjob.client import builder, workspace
from trainjob.workspace import names


def folder(tmp_path: Path) -> Path:
    (tmp_path / "src" / "mylib").mkdir(parents=True)
    (tmp_path / "src" / "mylib" / "__init__.py").write_text("X = 1\n")
    return tmp_path / "src"


def test_the_trainjob_records_the_snapshot_even_after_an_annotations_option(
    tmp_path: Path,
) -> None:
    option = Workspace(str(folder(tmp_path)), storage_uri="s3://code/jobs")
    job = builder.build(runtime(), options=[option, Annotations({"team": "ml"})])
    snap = workspace.snapshot_in(job, [option])
    assert snap is not None and snap is option.snapshot
    ann = job["metadata"]["annotations"]
    assert ann["team"] == "ml" and ann[names.DIGEST] == snap.digest
    assert ann[names.SOURCE] == str((tmp_path / "src").resolve())
    assert ann[names.URI] == f"s3://code/jobs/{names.hexdigest(snap.digest)}.tar.gz"


def test_no_workspace_option_no_snapshot() -> None:
    job = builder.build(runtime(), options=[Annotations({"team": "ml"})])
    assert workspace.snapshot_in(job, [Annotations({"team": "ml"})]) is None
    assert names.DIGEST not in job["metadata"]["annotations"]


def test_a_bad_folder_or_size_is_a_one_line_value_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"^workspace .*/missing: no such folder$"):
        builder.build(runtime(), options=[Workspace(str(tmp_path / "missing"))])
    with pytest.raises(ValueError, match=r"is over the limit of 2 B "):
        builder.build(runtime(), options=[Workspace(str(folder(tmp_path)), max_size=2)])
    with pytest.raises(ValueError, match=r"^Workspace.max_size: Invalid value: 'big'"):
        builder.build(runtime(), options=[Workspace(str(tmp_path), max_size="big")])
