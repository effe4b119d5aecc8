"""The hf:// source: repo id, repo type, patterns and token, against a stand-in for the Hub.

The Hugging Face Hub cannot be reached from the test machines, so these tests use a TEST DOUBLE
for the Hub only: a small local HTTP server (``FakeHub``) that answers the four requests
``huggingface_hub.snapshot_download`` makes (repo info, recursive tree listing, HEAD and GET of
``/resolve/<sha>/<file>``), pointed at with ``HF_ENDPOINT``. The real huggingface_hub client
runs unchanged inside the real initializer process. The argument mapping is also checked
directly, with an injected download function.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.unit.initializers import fakehub
from tests.unit.initializers.conftest import Run
from tests.unit.initializers.fakehub import REPOS, TOKEN, FakeHub
from trainjob.initializers import config
from trainjob.initializers.sources import hf


@pytest.fixture(scope="module")
def hub() -> Iterator[FakeHub]:
    with fakehub.serve() as fake:
        yield fake


def hf_env(hub: FakeHub, uri: str, out: Path, **extra: str) -> dict[str, str]:
    return {
        "STORAGE_URI": uri,
        "OUTPUT_PATH": str(out),
        "HF_ENDPOINT": hub.url,
        "HF_HOME": str(out.parent / "hf-home"),
        "HF_HUB_DISABLE_TELEMETRY": "1",
        **extra,
    }


def tree(root: Path) -> set[str]:
    return {
        p.relative_to(root).as_posix()
        for p in root.rglob("*")
        if p.is_file() and ".cache" not in p.relative_to(root).parts
    }


def test_a_dataset_repo_is_downloaded_with_the_token(
    hub: FakeHub, run: Run, tmp_path: Path
) -> None:
    pytest.importorskip("huggingface_hub")
    out = tmp_path / "out"
    hub.auth.clear()
    proc = run("dataset", hf_env(hub, "hf://org/ds", out, ACCESS_TOKEN=TOKEN))
    assert proc.returncode == 0, proc.stderr
    assert tree(out) == set(REPOS["datasets/org/ds"])
    assert (out / "data/train.jsonl").read_bytes() == REPOS["datasets/org/ds"]["data/train.jsonl"]
    assert f"Bearer {TOKEN}" in hub.auth
    lines = proc.stdout.splitlines()
    assert lines[0] == f"Downloading hf://org/ds to {out}"
    assert lines[-1].startswith("Downloaded 4 files (0.0 MiB) in ")
    assert TOKEN not in proc.stdout + proc.stderr


def test_a_path_in_the_uri_fetches_only_that_folder(hub: FakeHub, run: Run, tmp_path: Path) -> None:
    pytest.importorskip("huggingface_hub")
    out = tmp_path / "out"
    proc = run("dataset", hf_env(hub, "hf://org/ds/data", out, IGNORE_PATTERNS="test*,*/test*"))
    assert proc.returncode == 0, proc.stderr
    assert tree(out) == {"data/train.jsonl"}


def test_a_model_repo_keeps_upstreams_file_types(hub: FakeHub, run: Run, tmp_path: Path) -> None:
    pytest.importorskip("huggingface_hub")
    out = tmp_path / "out"
    proc = run("model", hf_env(hub, "hf://org/llm", out))
    assert proc.returncode == 0, proc.stderr
    assert tree(out) == {"config.json", "model.safetensors", "tokenizer.model"}


def test_a_missing_repo_is_one_error_line(hub: FakeHub, run: Run, tmp_path: Path) -> None:
    pytest.importorskip("huggingface_hub")
    out = tmp_path / "out"
    proc = run("dataset", hf_env(hub, "hf://org/missing", out, ACCESS_TOKEN=TOKEN))
    assert proc.returncode == 1
    assert proc.stderr.splitlines() == [
        "error: STORAGE_URI: dataset repo 'org/missing' not found: "
        "check the repo id in STORAGE_URI, or check ACCESS_TOKEN"
    ]
    assert TOKEN not in proc.stdout + proc.stderr


def test_an_unreachable_hub_is_one_error_line(run: Run, tmp_path: Path) -> None:
    pytest.importorskip("huggingface_hub")
    env = hf_env(FakeHub("http://127.0.0.1:9"), "hf://org/ds", tmp_path / "out")
    proc = run("dataset", env)
    assert proc.returncode == 1
    [line] = proc.stderr.splitlines()
    assert line.startswith("error: cannot reach the Hugging Face Hub at http://127.0.0.1:9 (")
    assert line.endswith("check the network, or set HF_ENDPOINT to a reachable mirror")


@pytest.mark.parametrize(
    ("kind", "uri", "patterns", "want"),
    [
        pytest.param(
            config.Kind.DATASET,
            "hf://org/ds",
            None,
            hf.Request("org/ds", "dataset", "/o", None, None, TOKEN),
            id="a whole dataset repo",
        ),
        pytest.param(
            config.Kind.DATASET,
            "hf://squad",
            None,
            hf.Request("squad", "dataset", "/o", None, None, TOKEN),
            id="a dataset with no owner (a canonical name)",
        ),
        pytest.param(
            config.Kind.DATASET,
            "hf://org/ds/data/train.jsonl",
            "*.md",
            hf.Request(
                "org/ds",
                "dataset",
                "/o",
                ("data/train.jsonl", "data/train.jsonl/*"),
                ("*.md",),
                TOKEN,
            ),
            id="a file of a dataset repo",
        ),
        pytest.param(
            config.Kind.MODEL,
            "hf://org/llm",
            None,
            hf.Request(
                "org/llm",
                "model",
                "/o",
                ("*.json", "*.safetensors", "*.model", "*.txt"),
                ("*.msgpack", "*.h5", "*.bin", "*.pt", "*.pth"),
                TOKEN,
            ),
            id="a model repo with upstream's patterns",
        ),
    ],
)
def test_the_snapshot_download_arguments(
    kind: config.Kind, uri: str, patterns: str | None, want: hf.Request
) -> None:
    env = {"STORAGE_URI": uri, "OUTPUT_PATH": "/o", "ACCESS_TOKEN": TOKEN}
    if patterns is not None:
        env["IGNORE_PATTERNS"] = patterns
    assert hf.request(config.from_env(kind, env)) == want


def test_fetch_hands_the_request_to_the_download_function(tmp_path: Path) -> None:
    """Without the Hub: ``fetch`` calls the injected download with the mapped arguments."""
    env = {"STORAGE_URI": "hf://org/ds/data", "OUTPUT_PATH": str(tmp_path), "ACCESS_TOKEN": TOKEN}
    cfg = config.from_env(config.Kind.DATASET, env)
    seen: list[hf.Request] = []

    def download(req: hf.Request) -> None:
        seen.append(req)
        (tmp_path / "data").mkdir()
        (tmp_path / "data" / "a.txt").write_bytes(b"a" * 10)

    hf.fetch(cfg, download=download)
    assert seen == [hf.Request("org/ds", "dataset", str(tmp_path), ("data", "data/*"), None, TOKEN)]


def test_patterns_that_leave_out_every_file_are_an_error(
    hub: FakeHub, run: Run, tmp_path: Path
) -> None:
    pytest.importorskip("huggingface_hub")
    out = tmp_path / "out"
    proc = run("model", hf_env(hub, "hf://org/llm", out, IGNORE_PATTERNS="*"))
    assert proc.returncode == 1
    assert proc.stderr.splitlines() == [
        "error: nothing downloaded from hf://org/llm: only *.json, *.safetensors, *.model, *.txt "
        "are fetched and IGNORE_PATTERNS='*'; narrow IGNORE_PATTERNS"
    ]


def test_a_present_file_with_other_bytes_is_fetched_again_after_the_hub_s_hash(
    hub: FakeHub, run: Run, tmp_path: Path
) -> None:
    """huggingface_hub keeps a local file whose download metadata is current; its bytes must
    also be the Hub's (the git blob id here; SHA-256 for LFS files) or it is fetched again."""
    pytest.importorskip("huggingface_hub")
    out = tmp_path / "out"
    first = run("dataset", hf_env(hub, "hf://org/ds", out))
    assert first.returncode == 0, first.stderr
    train = out / "data/train.jsonl"
    stamp = train.stat()
    want = REPOS["datasets/org/ds"]["data/train.jsonl"]
    train.write_bytes(b"X" * len(want))  # same size, other bytes, the same time
    os.utime(train, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))
    again = run("dataset", hf_env(hub, "hf://org/ds", out))
    assert again.returncode == 0, again.stderr
    assert train.read_bytes() == want
    assert "data/train.jsonl: present with other content than the Hub's: downloading it again" in (
        again.stdout + again.stderr
    )
