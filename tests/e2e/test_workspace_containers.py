"""A workspace on the container backend, for real: the snapshot's read-only copy is mounted at
``/trainjob/workspace`` in each node's container, where the code imports the folder's package
as packed at submit; a second job shares the copy. Skipped, saying why, where podman cannot run
containers (tests/containers.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from tests import containers
from tests.e2e import local_jobs as L

from trainjob.local import LocalExecutor
from trainjob.local.client import workspaces as local_workspaces
from trainjob.local.job.containers import ContainerSettings
from trainjob.workspace import names, pack

pytestmark = pytest.mark.e2e
TIMEOUT = 480.0

CODE = (
    "import os, mylib\n"
    "print('rank', os.environ['INDEX'], mylib.GREETING, 'in', os.getcwd())\n"
    "try:\n"
    "    open('mylib/new.py', 'w')\n"
    "except OSError as e:\n"
    "    print('read-only:', type(e).__name__)\n"
)


@pytest.fixture
def ex(tmp_path: Path) -> Iterator[LocalExecutor]:
    executor = LocalExecutor(tmp_path / "home", runner=ContainerSettings().to_json())
    executor.apply_runtime(L.runtime(image=containers.image("initializer")))
    yield executor
    for s in executor.states(None, pods=False):
        executor.delete(s.name, s.namespace)


def test_two_containers_import_the_folder_as_packed_and_cannot_change_it(
    tmp_path: Path, ex: LocalExecutor
) -> None:
    src = tmp_path / "proj"
    (src / "mylib").mkdir(parents=True)
    (src / "mylib" / "__init__.py").write_text("GREETING = 'packed at submit'\n")
    (src / "train.py").write_text(CODE)
    snap = pack.pack(src)
    for name in ("ws-c1", "ws-c2"):
        tj = L.trainjob(name, "", nodes=2)
        assert tj.spec.trainer is not None
        tj.spec.trainer.command = ["python", "train.py"]
        tj.metadata.annotations = snap.annotations()
        ex.submit(tj, workspace=snap)
        (src / "mylib" / "__init__.py").write_text("GREETING = 'edited after submit'\n")
        state = ex.wait(name, "default", timeout=TIMEOUT)
        assert state.phase == "Complete", state.message
        for index in ("0", "1"):
            log = "".join(ex.logs(name, "default", "node", int(index)))
            assert f"rank {index} packed at submit in {names.MOUNT_PATH}" in log, log
            assert "read-only: OSError" in log or "read-only: PermissionError" in log, log
        (src / "mylib" / "__init__.py").write_text("GREETING = 'packed at submit'\n")
    copy = local_workspaces.copy_of(ex.home, snap.digest)
    assert sorted(p.name for p in (ex.home / "workspaces").iterdir()) == [copy.name]
