"""The s3:// source against a real S3-compatible server (moto's), run as the initializer process.

Each test uses its own bucket; the initializer runs as ``python -m trainjob.initializers...``
with upstream's env (``STORAGE_URI``, ``ENDPOINT``, ``ACCESS_KEY_ID``, ``SECRET_ACCESS_KEY``,
``REGION``, ``IGNORE_PATTERNS``) and ``OUTPUT_PATH`` pointing at a temporary directory.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from tests.unit.initializers.conftest import S3, SECRET_ACCESS_KEY, Run

FILES = {
    "data/train.jsonl": b'{"text": "hello"}\n' * 1000,
    "data/eval.jsonl": b'{"text": "bye"}\n' * 10,
    "data/shards/part-0.bin": b"\x00" * 300_000,
    "data/shards/part-1.bin": b"\x01" * 300_000,
    "data/README.md": b"# a dataset\n",
    "data2/other.txt": b"not under data/\n",
    "model/config.json": b"{}",
    "model/model.safetensors": b"w" * 5000,
    "model/pytorch_model.bin": b"b" * 5000,
}


def make_bucket(s3: S3, files: dict[str, bytes] = FILES) -> str:
    bucket = f"b-{uuid.uuid4().hex[:12]}"
    s3.client.create_bucket(Bucket=bucket)
    for key, body in files.items():
        s3.client.put_object(Bucket=bucket, Key=key, Body=body)
    return bucket


def tree(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def test_downloads_every_object_under_the_prefix_keeping_relative_paths(
    s3: S3, run: Run, tmp_path: Path
) -> None:
    bucket = make_bucket(s3)
    out = tmp_path / "out"
    proc = run("dataset", s3.env(f"s3://{bucket}/data", out))
    assert proc.returncode == 0, proc.stderr
    want = {k.removeprefix("data/"): v for k, v in FILES.items() if k.startswith("data/")}
    assert tree(out) == want  # data2/ shares the string prefix but is not under data/
    lines = proc.stdout.splitlines()
    assert lines[0] == f"Downloading s3://{bucket}/data to {out}"
    assert lines[1] == "5 files (0.6 MiB) to download"
    assert any(ln.startswith("5/5 files, 0.6/0.6 MiB") for ln in lines)
    assert lines[-1].startswith("Downloaded 5 files (0.6 MiB) in ")
    assert lines[-1].endswith(" s")
    assert proc.stderr == ""


def test_a_second_run_downloads_nothing_and_a_changed_file_is_fetched_again(
    s3: S3, run: Run, tmp_path: Path
) -> None:
    bucket = make_bucket(s3)
    out = tmp_path / "out"
    env = s3.env(f"s3://{bucket}/data/", out)
    assert run("dataset", env).returncode == 0
    (out / "eval.jsonl").write_bytes(b"truncated")  # as an interrupted copy would leave it
    mtime = (out / "train.jsonl").stat().st_mtime_ns

    proc = run("dataset", env)
    assert proc.returncode == 0, proc.stderr
    assert "1 files (0.0 MiB) to download, 4 already present" in proc.stdout
    assert proc.stdout.splitlines()[-1].startswith("Downloaded 1 files (0.0 MiB)")
    assert (out / "eval.jsonl").read_bytes() == FILES["data/eval.jsonl"]
    assert (out / "train.jsonl").stat().st_mtime_ns == mtime

    proc = run("dataset", env)
    assert "0 files (0.0 MiB) to download, 5 already present" in proc.stdout
    assert proc.stdout.splitlines()[-1].startswith("Downloaded 0 files (0.0 MiB)")
    assert not list(out.rglob("*.part"))


@pytest.mark.parametrize(
    ("patterns", "want"),
    [
        pytest.param("*.bin", {"train.jsonl", "eval.jsonl", "README.md"}, id="a suffix"),
        pytest.param(
            " shards/ , README.md", {"train.jsonl", "eval.jsonl"}, id="a folder and a name"
        ),
        pytest.param(
            "",
            {"train.jsonl", "eval.jsonl", "README.md", "shards/part-0.bin", "shards/part-1.bin"},
            id="empty means none",
        ),
    ],
)
def test_ignore_patterns_drop_matching_relative_paths(
    s3: S3, run: Run, tmp_path: Path, patterns: str, want: set[str]
) -> None:
    bucket = make_bucket(s3)
    out = tmp_path / "out"
    proc = run("dataset", s3.env(f"s3://{bucket}/data", out, IGNORE_PATTERNS=patterns))
    assert proc.returncode == 0, proc.stderr
    assert set(tree(out)) == want


def test_the_model_initializer_skips_upstreams_default_weight_formats(
    s3: S3, run: Run, tmp_path: Path
) -> None:
    bucket = make_bucket(s3)
    out = tmp_path / "out"
    proc = run("model", s3.env(f"s3://{bucket}/model", out))
    assert proc.returncode == 0, proc.stderr
    assert set(tree(out)) == {"config.json", "model.safetensors"}


def test_a_key_names_one_object(s3: S3, run: Run, tmp_path: Path) -> None:
    bucket = make_bucket(s3)
    out = tmp_path / "out"
    proc = run("dataset", s3.env(f"s3://{bucket}/data/train.jsonl", out))
    assert proc.returncode == 0, proc.stderr
    assert tree(out) == {"train.jsonl": FILES["data/train.jsonl"]}


def test_many_objects_are_fetched_in_parallel_and_all_arrive(
    s3: S3, run: Run, tmp_path: Path
) -> None:
    files = {f"many/{i // 10}/f{i}.txt": f"file {i}\n".encode() * (i + 1) for i in range(60)}
    bucket = make_bucket(s3, files)
    out = tmp_path / "out"
    proc = run("dataset", s3.env(f"s3://{bucket}", out))
    assert proc.returncode == 0, proc.stderr
    assert tree(out) == files
    assert "60/60 files" in proc.stdout


def test_the_secret_key_appears_nowhere_in_the_output(s3: S3, run: Run, tmp_path: Path) -> None:
    bucket = make_bucket(s3)
    ok = run("dataset", s3.env(f"s3://{bucket}/data", tmp_path / "a"))
    missing = run("dataset", s3.env(f"s3://{bucket}-nope/data", tmp_path / "b"))
    assert ok.returncode == 0 and missing.returncode == 1
    for proc in (ok, missing):
        assert SECRET_ACCESS_KEY not in proc.stdout + proc.stderr


@pytest.mark.parametrize(
    ("uri", "extra", "want"),
    [
        pytest.param(
            "s3://{bucket}-missing/data",
            {},
            "error: STORAGE_URI: bucket '{bucket}-missing' does not exist at {endpoint}: "
            "check the bucket name in STORAGE_URI (and ENDPOINT)",
            id="a missing bucket",
        ),
        pytest.param(
            "s3://{bucket}/nothing-here",
            {},
            "error: STORAGE_URI: no object or prefix s3://{bucket}/nothing-here at {endpoint}: "
            "check the URI",
            id="a missing prefix",
        ),
        pytest.param(
            "s3://{bucket}/nothing-here/",
            {},
            "error: STORAGE_URI: no objects under s3://{bucket}/nothing-here/: check the prefix",
            id="a missing folder",
        ),
        pytest.param(
            "s3:///data",
            {},
            "error: STORAGE_URI: 's3:///data' names no bucket: use s3://bucket or s3://bucket/prefix",
            id="no bucket",
        ),
        pytest.param(
            "s3://{bucket}/data",
            {"ENDPOINT": "http://127.0.0.1:9"},
            "error: ENDPOINT: cannot connect to http://127.0.0.1:9: check ENDPOINT (scheme, host, port)",
            id="an endpoint nobody listens on",
        ),
        pytest.param(
            "s3://{bucket}/data",
            {"SECRET_ACCESS_KEY": ""},
            "error: SECRET_ACCESS_KEY: not set: ACCESS_KEY_ID and SECRET_ACCESS_KEY go together",
            id="half a key pair",
        ),
    ],
)
def test_errors_are_one_line_naming_the_env_var_to_fix(
    s3: S3, run: Run, tmp_path: Path, uri: str, extra: dict[str, str], want: str
) -> None:
    bucket = make_bucket(s3, {"data/a.txt": b"a"})
    env = s3.env(uri.format(bucket=bucket), tmp_path / "out", **extra)
    proc = run("dataset", env)
    assert proc.returncode == 1
    assert proc.stderr.splitlines() == [want.format(bucket=bucket, endpoint=s3.endpoint)]
    assert "Traceback" not in proc.stdout + proc.stderr


def test_a_role_arn_is_assumed_through_sts_at_the_endpoint(
    s3: S3, run: Run, tmp_path: Path
) -> None:
    bucket = make_bucket(s3, {"data/a.txt": b"a"})
    role = "arn:aws:iam::123456789012:role/dataset-reader"
    proc = run("dataset", s3.env(f"s3://{bucket}/data", tmp_path / "out", ROLE_ARN=role))
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "out" / "a.txt").read_bytes() == b"a"
    sts = pytest.importorskip("moto.sts.models")  # the server runs in this process
    assumed = sts.sts_backends["123456789012"]["aws"].assumed_roles
    assert [(r.role_arn, r.session_name) for r in assumed][-1:] == [(role, "trainjob-initializer")]


def test_a_key_leading_outside_the_output_dir_is_skipped(s3: S3, run: Run, tmp_path: Path) -> None:
    bucket = make_bucket(s3, {"data/ok.txt": b"ok", "data/../../escape.txt": b"no"})
    out = tmp_path / "deep" / "out"
    proc = run("dataset", s3.env(f"s3://{bucket}/data", out))
    assert proc.returncode == 0, proc.stderr
    assert tree(out) == {"ok.txt": b"ok"}
    assert not list(tmp_path.rglob("escape.txt"))
    assert "its key leads outside the output dir" in proc.stdout


def test_patterns_that_leave_out_every_object_are_an_error(
    s3: S3, run: Run, tmp_path: Path
) -> None:
    bucket = make_bucket(s3)
    out = tmp_path / "out"
    proc = run(
        "dataset", s3.env(f"s3://{bucket}/data", out, IGNORE_PATTERNS="*.jsonl,*.md,shards/")
    )
    assert proc.returncode == 1
    listed = sum(1 for key in FILES if key.startswith("data/"))
    assert proc.stderr.splitlines() == [
        f"error: IGNORE_PATTERNS='*.jsonl,*.md,shards/' leaves out all {listed} file(s) under "
        f"s3://{bucket}/data/: nothing to download; narrow IGNORE_PATTERNS (set it to an empty "
        "value to keep everything)"
    ]
    one = run("dataset", s3.env(f"s3://{bucket}/data/train.jsonl", out, IGNORE_PATTERNS="*.jsonl"))
    assert one.returncode == 1
    assert "leaves out all 1 file(s) under s3://" in one.stderr
