"""Files of the local backend are private and never reached through a link (issue 11, class 7),
and a failed pod's message says why it ended, in plain text (class 10)."""

from __future__ import annotations

import base64
import os
import stat
from pathlib import Path

import pytest

from trainjob.local.job import podrun, pods, volumes
from trainjob.local.state import files
from trainjob.runtime.plan import Plan


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def _pod(
    volume: dict[str, object], mounts: list[dict[str, object]] | None = None
) -> pods.PodTemplate:
    spec = {
        "containers": [{"name": "node", "command": ["true"], "volumeMounts": mounts or []}],
        "volumes": [volume],
    }
    return pods.PodTemplate("node", 0, 0, "j-node-0-0", "j-node-0-0-x", {}, {}, spec)


def test_secret_and_config_map_files_are_owner_only_whatever_their_mode(tmp_path: Path) -> None:
    plan = Plan(
        (
            {"kind": "Secret", "metadata": {"name": "ssh"}, "data": {"id_rsa": base64.b64encode(b"KEY").decode()}},
            {"kind": "ConfigMap", "metadata": {"name": "hosts"}, "data": {"hostfile": "localhost slots=2\n"}},
        )
    )  # fmt: skip
    root = tmp_path / "job" / "volumes"
    root.parent.mkdir()
    volumes.materialize(
        _pod({"name": "ssh", "secret": {"secretName": "ssh", "defaultMode": 0o640}}), plan, root
    )
    volumes.materialize(
        _pod({"name": "hosts", "configMap": {"name": "hosts", "defaultMode": 0o755}}), plan, root
    )
    assert (_mode(root), _mode(root / "ssh"), _mode(root / "ssh" / "id_rsa")) == (
        0o700,
        0o700,
        0o600,
    )
    assert _mode(root / "hosts" / "hostfile") == 0o700  # the owner's execute bit stays
    assert (root / "ssh" / "id_rsa").read_bytes() == b"KEY"


def test_a_volume_file_is_not_written_through_a_link(tmp_path: Path) -> None:
    plan = Plan(({"kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"f": "x"}},))
    root = tmp_path / "job" / "volumes"
    (root / "c").mkdir(parents=True)
    target = tmp_path / "elsewhere"
    (root / "c" / "f").symlink_to(target)
    with pytest.raises(files.UnsafePathError, match="it is a symbolic link"):
        volumes.materialize(_pod({"name": "c", "configMap": {"name": "c"}}), plan, root)
    assert not target.exists()


@pytest.mark.parametrize("sub", ["../../etc", "/etc", "a/../../b"])
def test_a_sub_path_that_climbs_out_of_its_volume_is_refused(sub: str, tmp_path: Path) -> None:
    pod = _pod({"name": "w", "emptyDir": {}}, [{"name": "w", "mountPath": "/w", "subPath": sub}])
    with pytest.raises(pods.PodConfigError, match="must be a relative path inside its volume"):
        pods.mount_map(pod.spec["containers"][0], pods.volume_dirs(pod, tmp_path))


def test_private_dirs_refuse_a_link_on_the_way(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "jobs").symlink_to(tmp_path)
    with pytest.raises(files.UnsafePathError, match="it is a symbolic link"):
        files.private_dirs(home, home / "jobs" / "default")


def test_remove_tree_removes_a_link_not_its_target(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / "jobs").mkdir(parents=True)
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "keep").write_text("x")
    (home / "jobs" / "job").symlink_to(victim)
    files.remove_tree(home, home / "jobs" / "job")
    assert not (home / "jobs" / "job").exists() and (victim / "keep").exists()
    (home / "jobs" / "real").mkdir()
    (home / "jobs" / "real" / "inner-link").symlink_to(victim)
    files.remove_tree(home, home / "jobs" / "real")
    assert not (home / "jobs" / "real").exists() and (victim / "keep").exists()


TORCHRUN_KILLED = """\
rank 1 step 10 loss 0.5
W1201 12:00:00.000000 1 torch/distributed/elastic/multiprocessing/api.py:900] Sending process 12 closing signal SIGTERM
E1201 12:00:01.000000 1 torch/distributed/elastic/multiprocessing/api.py:874] failed (exitcode: -9) local_rank: 1 (pid: 13) of binary: /venv/bin/python
Traceback (most recent call last):
torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
============================================================
train.py FAILED
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2026-12-01_12:00:01
  host      : localhost
  rank      : 1 (local_rank: 1)
  exitcode  : -9 (pid: 13)
  error_file: <N/A>
  traceback : Signal 9 (SIGKILL) received by PID 13
============================================================
"""


@pytest.mark.parametrize(
    ("log", "code", "want"),
    [
        pytest.param(
            TORCHRUN_KILLED,
            1,
            "rank 1 (local rank 1) was killed by SIGKILL",
            id="torchrun's rank killed",
        ),
        pytest.param(
            "step 10\n", 137, "", id="a container killed by SIGKILL: its last line is not why"
        ),
        pytest.param(
            "step 10\nKeyError: 'x'\n", 143, "KeyError: 'x'", id="an exception still counts"
        ),
        pytest.param(
            "\x1b[31mValueError: bad\x1b[0m\n", 1, "ValueError: bad", id="colours dropped"
        ),
        pytest.param(
            "done\x08\x08\x1b]0;title\x07\n",
            1,
            "done\\x08\\x08",
            id="escapes dropped, control characters shown",
        ),
    ],
)
def test_a_failed_pod_s_message_is_its_cause_in_plain_text(
    log: str, code: int, want: str, tmp_path: Path
) -> None:
    path = tmp_path / "node-0.log"
    path.write_text(log)
    assert podrun.log_says(path, code) == want
