"""A workspace on a cluster: the ConfigMap the TrainJob owns (so deleting the job collects it),
and a refusal, before anything is created, of an archive no ConfigMap holds."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from trainjob.cluster import workspaces
from trainjob.errors import ConfigError
from trainjob.workspace import names, pack


def snap(tmp_path: Path, size: int = 10) -> pack.Snapshot:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "data.bin").write_bytes(__import__("os").urandom(size))
    return pack.pack(tmp_path / "src")


def test_the_configmap_holds_the_archive_and_is_owned_by_the_trainjob(tmp_path: Path) -> None:
    s = snap(tmp_path)
    created = {"metadata": {"name": "tune", "namespace": "team", "uid": "u-1"}}
    cm = workspaces.configmap(created, s)
    assert cm["metadata"]["name"] == "tune-workspace" and cm["metadata"]["namespace"] == "team"
    assert cm["metadata"]["ownerReferences"] == [
        {
            "apiVersion": "trainer.kubeflow.org/v1alpha1",
            "kind": "TrainJob",
            "name": "tune",
            "uid": "u-1",
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    assert base64.b64decode(cm["binaryData"][names.ARCHIVE_KEY]) == s.archive
    assert cm["immutable"] is True and cm["metadata"]["annotations"][names.DIGEST] == s.digest


def test_an_archive_too_large_for_a_configmap_is_refused_with_the_s3_fix(tmp_path: Path) -> None:
    s = snap(tmp_path, names.CONFIGMAP_LIMIT + 1)  # random bytes: gzip cannot shrink them
    job = {"metadata": {"name": "t", "annotations": s.annotations()}}
    with pytest.raises(ConfigError, match=r"more than a ConfigMap holds .*--workdir-uri s3://"):
        workspaces.before_create(job, s)


def test_an_annotation_naming_another_snapshot_is_refused(tmp_path: Path) -> None:
    s = snap(tmp_path)
    job = {"metadata": {"name": "t", "annotations": {names.DIGEST: "sha256:" + "0" * 64}}}
    with pytest.raises(ConfigError, match="must be the snapshot's digest"):
        workspaces.before_create(job, s)


class _Kube:
    """What check_rerun asks of a cluster: one ConfigMap, or none."""

    def __init__(self, cm: dict[str, object] | None) -> None:
        self.cm = cm
        self.asked: list[tuple[str, str]] = []

    def get_or_none(self, resource: object, name: str, namespace: str) -> object:
        self.asked.append((name, namespace))
        return self.cm


def test_a_rerun_naming_a_snapshot_no_configmap_holds_is_refused_with_the_fix() -> None:
    digest = "sha256:" + "ab" * 32
    job = {"metadata": {"name": "t", "annotations": {names.DIGEST: digest}}}
    kube = _Kube(None)
    with pytest.raises(ConfigError, match=r"stored nowhere on the cluster.*--workdir DIR"):
        workspaces.check_rerun(kube, job, "team")  # type: ignore[arg-type]
    assert kube.asked == [("t-workspace", "team")]
    held = _Kube({"metadata": {"annotations": {names.DIGEST: digest}}})
    workspaces.check_rerun(held, job, "team")  # type: ignore[arg-type]
    in_s3 = {
        "metadata": {"name": "t", "annotations": {names.DIGEST: digest, names.URI: "s3://b/k"}}
    }
    workspaces.check_rerun(_Kube(None), in_s3, "team")  # type: ignore[arg-type]
