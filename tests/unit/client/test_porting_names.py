"""Names a Kubeflow SDK script imports, found at the same paths once ``kubeflow.trainer`` is
replaced with ``trainjob``: the ``trainjob.options`` and ``trainjob.types`` modules (the same
objects as ``trainjob``'s), ``get_tpu_num_nodes`` and ``TrainingRuntimeSource``."""

from __future__ import annotations

import importlib

import pytest

import trainjob
from trainjob.client import options as client_options
from trainjob.client import types as client_types


@pytest.mark.parametrize(
    ("module", "names"),
    [
        pytest.param(
            "trainjob.options",
            ["Name", "Labels", "Annotations", "RuntimePatch", "TrainerCommand", "PodSpecPatch"],
            id="kubeflow.trainer.options",
        ),
        pytest.param("trainjob.options.common", ["Name"], id="kubeflow.trainer.options.common"),
        pytest.param(
            "trainjob.options.kubernetes",
            ["Labels", "RuntimePatch", "ContainerPatch", "ActiveDeadlineSeconds"],
            id="kubeflow.trainer.options.kubernetes",
        ),
        pytest.param(
            "trainjob.types.types",
            ["TrainJob", "Step", "Runtime", "CustomTrainer", "Initializer", "Event"],
            id="kubeflow.trainer.types.types",
        ),
        pytest.param("trainjob.types", ["TrainJob", "CustomTrainer"], id="kubeflow.trainer.types"),
    ],
)
def test_upstream_module_paths_hold_the_same_objects(module: str, names: list[str]) -> None:
    mod = importlib.import_module(module)
    for name in names:
        obj = getattr(mod, name)
        home = client_options if module.startswith("trainjob.options") else client_types
        assert obj is getattr(home, name), name
        assert name in mod.__all__


def test_every_alias_module_lists_only_names_it_has() -> None:
    for module in (
        "trainjob.options",
        "trainjob.options.common",
        "trainjob.options.kubernetes",
        "trainjob.types",
        "trainjob.types.types",
    ):
        mod = importlib.import_module(module)
        assert [n for n in mod.__all__ if not hasattr(mod, n)] == [], module


@pytest.mark.parametrize(
    ("num_slices", "topology", "chips_per_host", "want"),
    [
        pytest.param(1, "2x2", 4, 1, id="a slice of one host"),
        pytest.param(2, "4x4", 4, 8, id="16 chips are 4 hosts a slice"),
        pytest.param(3, "1x1", 4, 3, id="a slice smaller than a host takes one"),
        pytest.param(1, "2x2x4", 8, 2, id="3D topology, 8 chips a host"),
        pytest.param(2, "2X4", 4, 4, id="upper-case X"),
    ],
)
def test_get_tpu_num_nodes(num_slices: int, topology: str, chips_per_host: int, want: int) -> None:
    assert trainjob.get_tpu_num_nodes(num_slices, topology, chips_per_host) == want


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        pytest.param((0, "2x2"), "num_slices must be positive", id="no slices"),
        pytest.param((1, "2x2", 0), "chips_per_host must be positive", id="no chips a host"),
        pytest.param((1, ""), "TPU topology must be specified", id="empty topology"),
        pytest.param((1, "2xa"), "Must be formatted as 'AxB' or 'AxBxC'", id="not numbers"),
        pytest.param((1, "2"), "exactly 2 or 3 dimensions", id="one dimension"),
        pytest.param((1, "2x0"), "dimensions must be positive", id="a zero dimension"),
        pytest.param((1, "2x3"), "cleanly divisible by chips_per_host (4)", id="6 chips, 4 a host"),
    ],
)
def test_get_tpu_num_nodes_errors(args: tuple[int, str, int], fragment: str) -> None:
    with pytest.raises(ValueError, match=fragment.replace("(", r"\(").replace(")", r"\)")):
        trainjob.get_tpu_num_nodes(*args)


def test_training_runtime_source_defaults_and_checks_schemes() -> None:
    assert trainjob.TrainingRuntimeSource().sources == ["github://kubeflow/trainer"]
    ok = trainjob.TrainingRuntimeSource(sources=["file:///rt", "/abs/rt", "https://h/rt.yaml"])
    assert len(ok.sources) == 3
    with pytest.raises(ValueError, match=r"runtime source 'rt/' must start with github://"):
        trainjob.TrainingRuntimeSource(sources=["rt/"])
