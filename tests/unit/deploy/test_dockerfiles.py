"""docker/Containerfile, checked without a container engine (the images themselves are built and
run by tests/integration/test_controller_image.py and tests/e2e/test_*image*.py): what each
target copies exists and is in its build context, every image runs as a non-root user, the
controller image as the Deployment expects, and the helpers it runs do what they say."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
import sysconfig
import tomllib
from pathlib import Path
from types import ModuleType

import pytest
import yaml

REPO = Path(__file__).resolve().parents[3]
DOCKER = REPO / "docker"
TARGETS = ("controller", "initializer", "torch-trainer", "llm-trainer")


def stages() -> dict[str, list[tuple[str, str]]]:
    """Stage name -> its instructions (op, rest), from docker/Containerfile."""
    text = (DOCKER / "Containerfile").read_text().replace("\\\n", " ")
    out: dict[str, list[tuple[str, str]]] = {}
    current: list[tuple[str, str]] = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        op, _, rest = line.partition(" ")
        if op.upper() == "FROM":
            name = rest.split(" AS ")[-1].strip() if " AS " in rest else rest
            current = out.setdefault(name, [])
        current.append((op.upper(), rest.strip()))
    return out


def lineage(name: str) -> list[str]:
    """The stage and the stages it is built FROM, nearest first."""
    all_stages = stages()
    chain = [name]
    while True:
        base = all_stages[chain[-1]][0][1].split(" AS ")[0].strip()
        if base not in all_stages:
            return chain
        chain.append(base)


def last(name: str, op: str) -> str | None:
    for stage in lineage(name):
        for o, rest in reversed(stages()[stage]):
            if o == op:
                return rest
    return None


def test_every_target_exists_and_what_it_copies_is_in_the_build_context() -> None:
    all_stages = stages()
    allowed = (DOCKER / "Containerfile.dockerignore").read_text()
    for target in TARGETS:
        assert target in all_stages, f"no stage {target}"
    for name, ops in all_stages.items():
        for op, rest in ops:
            if op != "COPY" or rest.startswith("--from"):
                continue
            *sources, _dest = rest.split()
            for src in sources:
                assert (REPO / src).exists(), f"stage {name} copies {src}, which does not exist"
                assert f"!{src.rstrip('/')}" in allowed or f"!{src}" in allowed, (
                    f"{src} is excluded from the build context by Containerfile.dockerignore"
                )


@pytest.mark.parametrize("target", TARGETS)
def test_every_image_runs_as_a_non_root_user(target: str) -> None:
    user = (last(target, "USER") or "0").split(":")[0]
    assert user.isdigit() and int(user) != 0


def test_the_controller_image_runs_the_controller_as_the_deployment_expects() -> None:
    assert last("controller", "ENTRYPOINT") == '["trainjob"]'
    assert last("controller", "CMD") == '["controller"]'
    env = " ".join(rest for op, rest in stages()["runtime"] if op == "ENV")
    assert "PYTHONDONTWRITEBYTECODE=1" in env, "the root filesystem is read-only"
    deployment = yaml.safe_load((REPO / "manifests/controller/base/deployment.yaml").read_text())
    pod = deployment["spec"]["template"]["spec"]
    assert last("controller", "USER") == (
        f"{pod['securityContext']['runAsUser']}:{pod['securityContext']['runAsGroup']}"
    )
    image = pod["containers"][0]["image"]
    repo = image.rsplit(":", 1)[0]
    text = (DOCKER / "Containerfile").read_text()
    assert re.search(rf"--target controller -t {re.escape(repo)}:", text)
    values = yaml.safe_load((REPO / "manifests/helm/trainjob/values.yaml").read_text())
    assert values["image"]["repository"] == repo


def _module(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(path.stem.replace("-", "_"), path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_requirements_prints_the_core_and_the_extras_dependencies() -> None:
    run = [sys.executable, str(DOCKER / "requirements.py")]
    core = subprocess.run(run, capture_output=True, text=True, check=True).stdout.split("\n")
    deps = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    typer = next(d.split("#")[0].strip() for d in deps if d.startswith("typer"))
    assert typer in core and not any(r.startswith("boto3") for r in core)
    init = subprocess.run([*run, "--only", "initializers"], capture_output=True, text=True)
    assert init.stdout.split() == ["boto3>=1.34", "huggingface_hub>=0.24"]
    bad = subprocess.run([*run, "--only", "nope"], capture_output=True, text=True)
    assert bad.returncode != 0 and "unknown extras ['nope']" in bad.stderr
    slim = subprocess.run([*run, "--without", "optuna"], capture_output=True, text=True).stdout
    assert typer in slim.split("\n") and not any(r.startswith("optuna") for r in slim.split())
    assert len(slim.split()) == len(core) - 2  # optuna, and core's trailing empty line
    nope = subprocess.run([*run, "--without", "numpyy"], capture_output=True, text=True)
    assert nope.returncode != 0 and "not a core dependency" in nope.stderr


def test_copy_dists_takes_a_distribution_with_everything_it_requires(tmp_path: Path) -> None:
    """torch from this environment, as TORCH_SOURCE=host copies it: its requirements followed
    (extras and markers included), each file from its RECORD."""
    pytest.importorskip("torch")
    mod = _module(DOCKER / "copy-dists.py")
    site = Path(sysconfig.get_paths()["purelib"])
    dists = mod.installed(site)
    picked = {d.name for d in mod.closure(dists, [mod.Requirement("torch")])}
    assert {"torch", "filelock", "sympy", "jinja2"} <= picked
    assert "transformers" not in picked, "only what torch needs"
    with pytest.raises(SystemExit, match="torch<1 is needed"):
        mod.closure(dists, [mod.Requirement("torch<1")])
    small = next(d for d in dists.values() if d.name == "filelock")
    (tmp_path / "bin").mkdir()
    mod.copy(small, tmp_path)
    assert (tmp_path / small.info.name / "METADATA").exists()
    assert (tmp_path / "filelock" / "__init__.py").exists()


def test_what_the_wheel_force_includes_is_in_the_build_context() -> None:
    """pip builds trainjob's wheel inside the image build: every file pyproject.toml's hatch
    force-include names must be copied in (the CRDs once were not, and every image failed)."""
    import tomllib

    project = tomllib.loads((REPO / "pyproject.toml").read_text())
    wheel = project["tool"]["hatch"]["build"]["targets"]["wheel"]
    copied = [rest.split()[0] for ops in stages().values() for op, rest in ops
              if op == "COPY" and not rest.startswith("--from")]  # fmt: skip
    allowed = (DOCKER / "Containerfile.dockerignore").read_text()
    for source in wheel.get("force-include", {}):
        top = source.split("/")[0]
        assert any(c.rstrip("/") == top or source.startswith(c.rstrip("/")) for c in copied), source
        assert f"!{top}/" in allowed, f"{source} is excluded from the build context"
    build = (REPO / "hack" / "build-images.sh").read_text()
    assert '"$REPO/manifests"' in build, "hack/build-images.sh copies manifests/ into its context"


def test_the_cpu_variant_removes_nothing_torch_loads_on_a_cpu(tmp_path: Path) -> None:
    """docker/torch-cpu.py (TORCH_VARIANT=cpu) against this environment's PyPI torch: none of
    what it would remove is a file that ``import torch`` and a gloo all-reduce load (what the
    dynamic loader maps: torch links twelve CUDA libraries, which must stay), and it does remove
    the big unloaded parts (triton's package, cuDNN's engines)."""
    pytest.importorskip("torch")
    mod = _module(DOCKER / "torch-cpu.py")
    site = Path(sysconfig.get_paths()["purelib"])
    if not (site / "nvidia").is_dir():
        pytest.skip("this environment's torch has no nvidia-* wheels (not PyPI's CUDA build)")
    probe = (
        mod.WORKLOAD
        + "\nprint('\\n'.join(l.split()[-1] for l in open('/proc/self/maps') if '.so' in l))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120,
        env={"CUDA_VISIBLE_DEVICES": "", "PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    loaded = {Path(line).resolve() for line in out.stdout.splitlines() if line.startswith("/")}
    assert any("nvidia" in str(p) for p in loaded), "torch loads CUDA libraries even on a CPU"
    gone = [p.resolve() for p in mod.removable(site)]
    assert {p.name for p in gone} >= {"triton", "libcudnn_engines_precompiled.so.9"}, gone
    clash = [p for p in loaded if any(p == g or g in p.parents for g in gone)]
    assert clash == [], f"torch-cpu.py would remove what torch loads: {clash}"
    # and pruning is what it says, on a copy shaped like the real thing
    fake = tmp_path / "site"
    for rel in ("triton/__init__.py", "triton-3.9.0.dist-info/METADATA",
                "nvidia/cudnn/lib/libcudnn.so.9", "nvidia/cudnn/lib/libcudnn_ops.so.9",
                "nvidia/cu13/lib/libcudart.so.13", "nvidia/cu13/lib/libcudart_static.a"):  # fmt: skip
        (fake / rel).parent.mkdir(parents=True, exist_ok=True)
        (fake / rel).write_bytes(b"x" * 10)
    assert mod.prune(fake) == 30
    left = sorted(str(p.relative_to(fake)) for p in fake.rglob("*") if p.is_file())
    assert left == ["nvidia/cu13/lib/libcudart.so.13", "nvidia/cudnn/lib/libcudnn.so.9",
                    "triton-3.9.0.dist-info/METADATA"]  # fmt: skip
