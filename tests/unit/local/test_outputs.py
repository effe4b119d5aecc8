"""What of a local job outlives it: volumeClaimPolicies volumes and claims, one directory per run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from trainjob.api.load import parse
from trainjob.errors import ConfigError
from trainjob.executor import catalog
from trainjob.local.job import outputs, pods
from trainjob.local.state import home as homes
from trainjob.runtime import compile
from trainjob.runtime.plan import Plan

CREATED = "2026-12-01T15:08:05Z"
UID = "3f2a9c1e-0000-4000-8000-000000000000"


def _llm_plan() -> Plan:
    tj = parse(
        {
            "apiVersion": "trainer.kubeflow.org/v1alpha1",
            "kind": "TrainJob",
            "metadata": {"name": "ft", "namespace": "team"},
            "spec": {
                "runtimeRef": {"name": "torchtune-llama3.2-1b"},
                "initializer": {
                    "dataset": {"storageUri": "file:///d"},
                    "model": {"storageUri": "file:///m"},
                },
                "trainer": {"command": ["tune", "run"]},
            },
        }
    )
    return compile(tj, catalog.resolve(tj))  # type: ignore[arg-type]


def _plan(spec: dict[str, Any]) -> Plan:
    return Plan(({"kind": "JobSet", "metadata": {"name": "j", "namespace": "team"}, "spec": spec},))


def _pod(job: str = "node", index: int = 0, volumes: list[Any] | None = None) -> pods.PodTemplate:
    spec: dict[str, Any] = {"containers": [{"name": "c"}], "volumes": volumes or []}
    return pods.PodTemplate(job, 0, index, "h", "h-x", {}, {}, spec)


def test_a_run_has_a_directory_of_its_own_named_by_its_time_and_uid(tmp_path: Path) -> None:
    run = homes.run_outputs_dir(tmp_path, "team", "ft", CREATED, UID)
    assert run == tmp_path / "outputs" / "team" / "ft" / "20261201-150805-3f2a9c1e"
    other = homes.run_outputs_dir(tmp_path, "team", "ft", CREATED, "9" + UID[1:])
    assert other != run and other.parent == run.parent, "a replaced run is kept beside"
    assert not run.is_relative_to(homes.job_dir(tmp_path, "team", "ft")), "not the scratch"
    with pytest.raises(ConfigError):
        homes.run_outputs_dir(tmp_path, "team", "..", CREATED, UID)


def test_the_llm_runtimes_workspace_and_output_dir_are_kept(tmp_path: Path) -> None:
    plan = _llm_plan()
    keep = outputs.kept(plan, tmp_path, "team", "ft", CREATED, UID)
    run = homes.run_outputs_dir(tmp_path, "team", "ft", CREATED, UID)
    assert keep.shared == {"initializer"}
    templates = pods.pod_templates(plan, UID)
    for t in templates:  # the initializers and the trainer share one kept directory
        assert keep.dirs(t) == {"initializer": run / "initializer"}
    scratch = homes.volumes_dir(tmp_path, "team", "ft")
    node = next(t for t in templates if t.job == "node")
    assert pods.volume_dirs(node, scratch, keep.dirs(node))["initializer"] == run / "initializer"
    found = outputs.describe(plan, keep, UID)
    assert found[0].name == "output_dir"
    assert found[0].location == str(run / "initializer" / "output")
    assert "node" in found[0].description
    assert [(o.name, o.location) for o in found[1:]] == [("initializer", str(run / "initializer"))]
    assert "/workspace" in found[1].description and "model-initializer" in found[1].description


def test_a_plain_runtime_keeps_nothing(tmp_path: Path) -> None:
    tj = parse(
        {
            "apiVersion": "trainer.kubeflow.org/v1alpha1",
            "kind": "TrainJob",
            "metadata": {"name": "tj"},
            "spec": {"runtimeRef": {"name": "torch-distributed"}, "trainer": {"command": ["x"]}},
        }
    )
    plan = compile(tj, catalog.resolve(tj))  # type: ignore[arg-type]
    keep = outputs.kept(plan, tmp_path, "default", "tj", CREATED, UID)
    assert outputs.describe(plan, keep, UID) == []


def test_whendeleted_delete_is_scratch_targeted_policies_get_a_directory_per_pod(
    tmp_path: Path,
) -> None:
    plan = _plan(
        {
            "volumeClaimPolicies": [
                {
                    "templates": [{"metadata": {"name": "tmp"}}],
                    "retentionPolicy": {"whenDeleted": "Delete"},
                },
                {"targetReplicatedJobs": ["node"], "templates": [{"metadata": {"name": "ckpt"}}]},
            ]
        }
    )
    keep = outputs.kept(plan, tmp_path, "team", "j", CREATED, UID)
    assert keep.shared == frozenset()
    run = keep.run_dir
    assert keep.dirs(_pod("node", 1)) == {"ckpt": run / "ckpt-node-0-1"}
    assert keep.dirs(_pod("launcher")) == {}


def test_a_claim_is_shared_by_name_and_a_bad_claim_name_is_refused(tmp_path: Path) -> None:
    keep = outputs.kept(_plan({}), tmp_path, "team", "j", CREATED, UID)
    vol = [{"name": "data", "persistentVolumeClaim": {"claimName": "shared-data"}}]
    assert keep.dirs(_pod(volumes=vol)) == {"data": tmp_path / "claims" / "team" / "shared-data"}
    bad = [{"name": "data", "persistentVolumeClaim": {"claimName": "../x"}}]
    with pytest.raises(pods.PodConfigError, match='volume "data"'):
        keep.dirs(_pod(volumes=bad))


@pytest.mark.parametrize(
    ("args", "want"),
    [
        (["output_dir=/w/out"], ["/w/out"]),
        (["--output_dir", "/w/out"], ["/w/out"]),
        (["--output-dir=/w/out"], ["/w/out"]),
        (["--output_dir"], []),
        (["my_output_dir=/w"], []),
    ],
)
def test_output_dir_arguments(args: list[str], want: list[str]) -> None:
    assert outputs._output_dirs({"command": ["train"], "args": args}) == want


def test_the_checkpoint_dir_and_restart_attempt_env_and_listing(tmp_path: Path) -> None:
    plan = _plan({})
    keep = outputs.kept(plan, tmp_path, "team", "j", CREATED, UID)
    assert keep.checkpoint_dir == keep.run_dir / "checkpoints"
    assert keep.env(2) == {
        "TRAINJOB_CHECKPOINT_DIR": str(keep.run_dir / "checkpoints"),
        "TRAINJOB_RESTART_ATTEMPT": "2",
    }
    assert outputs.describe(plan, keep, UID) == [], "an empty checkpoint dir is not listed"
    keep.checkpoint_dir.mkdir(parents=True)
    (keep.checkpoint_dir / "step-3.pt").write_bytes(b"x")
    (listed,) = outputs.describe(plan, keep, UID)
    assert (listed.name, listed.location) == ("checkpoints", str(keep.checkpoint_dir))


def test_a_job_that_wrote_nothing_leaves_no_empty_folders_and_one_that_did_keeps_them(
    tmp_path: Path,
) -> None:
    keep = outputs.kept(_plan({}), tmp_path, "team", "j", CREATED, UID)
    keep.checkpoint_dir.mkdir(parents=True)
    keep.drop_empty()
    assert not keep.run_dir.parent.exists() and keep.run_dir.parent.parent.is_dir()
    keep.checkpoint_dir.mkdir(parents=True)
    (keep.checkpoint_dir / "step-3.pt").write_bytes(b"x")
    keep.drop_empty()
    assert (keep.checkpoint_dir / "step-3.pt").read_bytes() == b"x"
    (keep.checkpoint_dir / "step-3.pt").unlink()
    (keep.run_dir / "initializer").mkdir()  # another kept volume: the run's folder stays
    keep.drop_empty()
    assert not keep.checkpoint_dir.exists() and (keep.run_dir / "initializer").is_dir()


def test_every_container_gets_the_extra_env_and_its_completion_index(tmp_path: Path) -> None:
    t = pods.PodTemplate(
        "node", 0, 3, "h", "h-x", {}, {}, {"containers": [{"name": "c", "command": ["true"]}]}
    )
    plan = _plan({})
    local = pods.build_pod(
        t, pods.network_for(plan, [t]), plan, tmp_path, "/", "d", {"PATH": "/usr/bin:/bin"},
        extra_env={"TRAINJOB_RESTART_ATTEMPT": "1"},
    )  # fmt: skip
    (ctr,) = local.containers
    assert ctr.env["JOB_COMPLETION_INDEX"] == "3"
    assert ctr.env["TRAINJOB_RESTART_ATTEMPT"] == "1"
