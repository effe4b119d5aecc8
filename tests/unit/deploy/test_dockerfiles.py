"""The Dockerfiles, checked without a container engine (none runs here): what they copy exists,
the controller image runs ``trainjob controller`` as a non-root user, and the image the manifests
deploy is the one the controller Dockerfile documents."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[3]
DOCKER = REPO / "docker"


def instructions(name: str) -> list[tuple[str, str]]:
    text = (DOCKER / name).read_text().replace("\\\n", " ")
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            op, _, rest = line.partition(" ")
            out.append((op.upper(), rest.strip()))
    return out


@pytest.mark.parametrize(
    "name", ["controller.Dockerfile", "initializer.Dockerfile", "trainer.Dockerfile"]
)
def test_what_a_dockerfile_copies_exists_and_is_in_its_context(name: str) -> None:
    ops = instructions(name)
    assert any(op == "FROM" for op, _ in ops)
    allowed = (DOCKER / f"{name}.dockerignore").read_text()
    for op, rest in ops:
        if op != "COPY" or rest.startswith("--from"):
            continue
        *sources, _dest = rest.split()
        for src in sources:
            assert (REPO / src).exists(), f"{name} copies {src}, which does not exist"
            assert f"!{src.rstrip('/')}" in allowed or f"!{src}" in allowed, (
                f"{src} is excluded from the build context by {name}.dockerignore"
            )


def test_the_controller_image_runs_the_controller_as_non_root() -> None:
    ops = dict(instructions("controller.Dockerfile"))  # the last instruction of each kind
    user = ops["USER"].split(":")[0]
    assert user.isdigit() and int(user) != 0
    assert ops["ENTRYPOINT"] == '["trainjob"]' and ops["CMD"] == '["controller"]'
    assert "PYTHONDONTWRITEBYTECODE=1" in ops["ENV"], "the root filesystem is read-only"


def test_the_manifests_deploy_the_controller_image() -> None:
    deployment = yaml.safe_load((REPO / "manifests/controller/base/deployment.yaml").read_text())
    image = deployment["spec"]["template"]["spec"]["containers"][0]["image"]
    repo = image.rsplit(":", 1)[0]
    assert re.search(rf"-t {re.escape(repo)}:", (DOCKER / "controller.Dockerfile").read_text())
    values = yaml.safe_load((REPO / "manifests/helm/trainjob/values.yaml").read_text())
    assert values["image"]["repository"] == repo
