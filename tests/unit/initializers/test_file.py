"""The file:// source and absolute paths: a file or a tree copied into OUTPUT_PATH."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.unit.initializers.conftest import Run


def make_tree(root: Path) -> dict[str, bytes]:
    files = {
        "train.jsonl": b"x" * 2000,
        "sub/eval.jsonl": b"y" * 100,
        "sub/deep/weights.bin": b"z" * 50,
        "notes.md": b"# notes\n",
    }
    for rel, body in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(body)
    return files


def tree(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


@pytest.mark.parametrize(
    "form", ["file://{path}", "{path}"], ids=["a file URI", "an absolute path"]
)
def test_a_directory_tree_is_copied(run: Run, tmp_path: Path, form: str) -> None:
    src = tmp_path / "my data"
    files = make_tree(src)
    out = tmp_path / "out"
    uri = form.format(path=src.as_posix().replace(" ", "%20") if "file" in form else src)
    proc = run("dataset", {"STORAGE_URI": uri, "OUTPUT_PATH": str(out)})
    assert proc.returncode == 0, proc.stderr
    assert tree(out) == files
    lines = proc.stdout.splitlines()
    assert lines[0] == f"Downloading {uri} to {out}"
    assert lines[1] == "4 files (0.0 MiB) to download"
    assert any(ln.startswith("4/4 files, 0.0/0.0 MiB") for ln in lines)
    assert lines[-1].startswith("Downloaded 4 files (0.0 MiB) in ")


def test_a_single_file_lands_under_its_name(run: Run, tmp_path: Path) -> None:
    src = tmp_path / "data.csv"
    src.write_text("a,b\n1,2\n")
    out = tmp_path / "out"
    proc = run("dataset", {"STORAGE_URI": f"file://{src}", "OUTPUT_PATH": str(out)})
    assert proc.returncode == 0, proc.stderr
    assert tree(out) == {"data.csv": b"a,b\n1,2\n"}


def test_ignore_patterns_and_the_model_default(run: Run, tmp_path: Path) -> None:
    src = tmp_path / "src"
    make_tree(src)
    out = tmp_path / "a"
    env = {"STORAGE_URI": str(src), "OUTPUT_PATH": str(out), "IGNORE_PATTERNS": "*.md,sub/deep/"}
    assert run("dataset", env).returncode == 0
    assert set(tree(out)) == {"train.jsonl", "sub/eval.jsonl"}

    out = tmp_path / "b"
    assert run("model", {"STORAGE_URI": str(src), "OUTPUT_PATH": str(out)}).returncode == 0
    assert set(tree(out)) == {"train.jsonl", "sub/eval.jsonl", "notes.md"}  # *.bin dropped


def test_a_second_run_copies_nothing(run: Run, tmp_path: Path) -> None:
    src = tmp_path / "src"
    make_tree(src)
    env = {"STORAGE_URI": str(src), "OUTPUT_PATH": str(tmp_path / "out")}
    assert run("dataset", env).returncode == 0
    proc = run("dataset", env)
    assert proc.returncode == 0
    assert "0 files (0.0 MiB) to download, 4 already present" in proc.stdout


def test_a_present_file_of_the_right_size_but_other_bytes_is_copied_again(
    run: Run, tmp_path: Path
) -> None:
    src = tmp_path / "src"
    files = make_tree(src)
    out = tmp_path / "out"
    env = {"STORAGE_URI": str(src), "OUTPUT_PATH": str(out)}
    assert run("dataset", env).returncode == 0
    (out / "train.jsonl").write_bytes(b"?" * 2000)
    proc = run("dataset", env)
    assert proc.returncode == 0
    assert "train.jsonl: present with other content: downloading it again" in proc.stdout
    assert "1 files (0.0 MiB) to download, 3 already present" in proc.stdout
    assert tree(out) == files


def test_an_output_dir_inside_the_source_is_not_copied_into_itself(
    run: Run, tmp_path: Path
) -> None:
    files = make_tree(tmp_path)
    proc = run("dataset", {"STORAGE_URI": str(tmp_path), "OUTPUT_PATH": str(tmp_path / "out")})
    assert proc.returncode == 0, proc.stderr
    assert tree(tmp_path / "out") == files


@pytest.mark.parametrize(
    ("uri", "want"),
    [
        pytest.param(
            "file:///no/such/dir",
            "error: STORAGE_URI: /no/such/dir does not exist: check the path "
            "(on a cluster, that the volume holding it is mounted into the initializer)",
            id="a missing path",
        ),
        pytest.param(
            "file://host/data",
            "error: STORAGE_URI: file URI 'file://host/data' names host 'host': "
            "use file:///absolute/path (three slashes) for a path on this machine",
            id="a file URI with a host",
        ),
        pytest.param(
            "file:relative/data",
            "error: STORAGE_URI: 'relative/data' is not an absolute path: use file:///absolute/path",
            id="a relative file URI",
        ),
    ],
)
def test_errors(run: Run, tmp_path: Path, uri: str, want: str) -> None:
    proc = run("dataset", {"STORAGE_URI": uri, "OUTPUT_PATH": str(tmp_path / "out")})
    assert proc.returncode == 1
    assert proc.stderr.splitlines() == [want]
    assert "Traceback" not in proc.stderr


def test_patterns_that_leave_out_every_file_are_an_error_not_an_empty_download(
    run: Run, tmp_path: Path
) -> None:
    src = tmp_path / "src"
    files = make_tree(src)
    out = tmp_path / "out"
    proc = run(
        "dataset", {"STORAGE_URI": str(src), "OUTPUT_PATH": str(out), "IGNORE_PATTERNS": "*"}
    )
    assert proc.returncode == 1
    assert proc.stderr.splitlines() == [
        f"error: IGNORE_PATTERNS='*' leaves out all {len(files)} file(s) "
        f"under {src}: nothing to download; narrow IGNORE_PATTERNS (set it to an empty value to "
        "keep everything)"
    ]
    assert not out.exists() or not any(out.iterdir())


def test_a_model_folder_of_only_bin_weights_names_the_default_patterns(
    run: Run, tmp_path: Path
) -> None:
    src = tmp_path / "old-model"
    src.mkdir()
    (src / "pytorch_model.bin").write_bytes(b"w")
    proc = run("model", {"STORAGE_URI": f"file://{src}", "OUTPUT_PATH": str(tmp_path / "out")})
    assert proc.returncode == 1
    [line] = proc.stderr.splitlines()
    assert line.startswith("error: IGNORE_PATTERNS='*.msgpack,*.h5,*.bin,*.pt,*.pth' leaves out")
    # and the fix it names works: an empty IGNORE_PATTERNS keeps the weights
    env = {
        "STORAGE_URI": f"file://{src}",
        "OUTPUT_PATH": str(tmp_path / "out"),
        "IGNORE_PATTERNS": "",
    }
    assert run("model", env).returncode == 0
    assert (tmp_path / "out" / "pytorch_model.bin").read_bytes() == b"w"


def test_an_empty_source_folder_is_an_error(run: Run, tmp_path: Path) -> None:
    src = tmp_path / "empty"
    (src / "sub").mkdir(parents=True)
    proc = run("dataset", {"STORAGE_URI": str(src), "OUTPUT_PATH": str(tmp_path / "out")})
    assert proc.returncode == 1
    assert proc.stderr.splitlines() == [
        f"error: STORAGE_URI: {src} has no files: nothing to download; check the path"
    ]
