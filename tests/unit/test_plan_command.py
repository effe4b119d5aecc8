"""``trainjob plan`` on valid input, and how every user error is printed (kubectl's format).

The malformed-input cases live in the error corpus (``test_corpus.py``); here: what is printed on
success, where runtimes come from, namespaces, several files and stdin, and ``trainjob version``.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

import trainjob
from trainjob.api import validation
from trainjob.api.load import load_file
from trainjob.cli import invalid_message, main
from trainjob.cli.plan import PLAN_HELP
from trainjob.errors import FieldError, InvalidError
from trainjob.runtime import compile
from trainjob.runtime.plan import Plan

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "torch-ddp.yaml"

TRAINJOB = """\
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata:
  name: {name}
{namespace}spec:
  runtimeRef:
    name: {runtime}
    kind: {kind}
"""
RUNTIME = """\
apiVersion: trainer.kubeflow.org/v1alpha1
kind: {kind}
metadata:
  name: {name}
{namespace}spec:
  mlPolicy:
    torch: {{}}
  template:
    spec:
      replicatedJobs:
        - name: node
          template:
            metadata:
              labels:
                trainer.kubeflow.org/trainjob-ancestor-step: trainer
            spec:
              template:
                spec:
                  containers:
                    - name: node
                      image: {image}
"""


def trainjob_yaml(
    name: str = "job",
    runtime: str = "torch-distributed",
    kind: str = "ClusterTrainingRuntime",
    namespace: str | None = None,
) -> str:
    ns = f"  namespace: {namespace}\n" if namespace else ""
    return TRAINJOB.format(name=name, runtime=runtime, kind=kind, namespace=ns)


def runtime_yaml(
    name: str = "torch-distributed",
    kind: str = "ClusterTrainingRuntime",
    image: str = "custom:1",
    namespace: str | None = None,
) -> str:
    ns = f"  namespace: {namespace}\n" if namespace else ""
    return RUNTIME.format(name=name, kind=kind, image=image, namespace=ns)


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


def write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def jobsets(out: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(out) if d["kind"] == "JobSet"]


def node_image(jobset: dict[str, object]) -> str:
    spec = jobset["spec"]
    assert isinstance(spec, dict)
    ctr = spec["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["containers"][0]
    return str(ctr["image"])


def test_plan_prints_the_compiled_plan_as_yaml(capsys: pytest.CaptureFixture[str]) -> None:
    (rt,) = load_file(ROOT / "manifests" / "runtimes" / "torch-distributed.yaml")
    (tj,) = load_file(EXAMPLE)
    want: Plan = compile(tj, rt)  # type: ignore[arg-type]
    code, out, err = run(["plan", "-f", str(EXAMPLE)], capsys)
    assert (code, err) == (0, "")
    assert out == want.to_yaml()


def test_plan_prints_a_json_list_of_the_same_objects(capsys: pytest.CaptureFixture[str]) -> None:
    _, as_yaml, _ = run(["plan", "-f", str(EXAMPLE)], capsys)
    code, out, err = run(["plan", "-f", str(EXAMPLE), "-o", "json"], capsys)
    assert (code, err) == (0, "")
    assert json.loads(out) == list(yaml.safe_load_all(as_yaml))


@pytest.mark.parametrize(
    ("args", "first_line"),
    [
        pytest.param(
            ["plan", "-f", str(EXAMPLE), "-o", "xml"],
            "error: invalid value for '--output' / '-o': Value error, 'xml' is not one of "
            "'yaml', 'json'.",
            id="an unknown output format",
        ),
        pytest.param(["plan"], "error: missing option '--filename' / '-f'.", id="no -f"),
        pytest.param(["plan", "--bogus"], "error: no such option: --bogus", id="an unknown flag"),
        pytest.param(
            ["plan", "-f", str(EXAMPLE), "extra"],
            "error: got unexpected extra argument(s) (extra)",
            id="an argument plan does not take",
        ),
    ],
)
def test_usage_errors_are_two_kubectl_lines(
    args: list[str], first_line: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(args, capsys)
    assert (code, out) == (2, "")
    assert err == f"{first_line}\nSee 'trainjob plan --help' for usage.\n"


def test_an_unknown_command_names_the_top_level_help(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(["plna"], capsys)
    assert (code, out) == (2, "")
    assert err.startswith("error: no such command 'plna'.")
    assert err.endswith("\nSee 'trainjob --help' for usage.\n")


def test_plan_help_names_its_options_and_an_example(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(["plan", "--help"], capsys)
    assert (code, err) == (0, "")
    text = " ".join(out.replace("│", " ").split())
    for part in ("-f, --filename FILE", "-o, --output yaml|json", "-n, --namespace NAMESPACE"):
        assert part in text
    assert "trainjob plan -f job.yaml -f runtime.yaml -o json" in text


@pytest.mark.parametrize(
    ("namespace_in_file", "flag", "want"),
    [
        pytest.param(None, [], "default", id="a TrainJob without namespace lands in default"),
        pytest.param(None, ["-n", "team-a"], "team-a", id="-n gives the namespace to one without"),
        pytest.param("team-b", [], "team-b", id="the object's own namespace is kept"),
        pytest.param("team-b", ["-n", "team-b"], "team-b", id="-n may repeat the object's own"),
    ],
)
def test_namespace_defaults_like_kubectl(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    namespace_in_file: str | None,
    flag: list[str],
    want: str,
) -> None:
    path = write(tmp_path, "tj.yaml", trainjob_yaml(namespace=namespace_in_file))
    code, out, err = run(["plan", "-f", path, *flag], capsys)
    assert (code, err) == (0, "")
    (js,) = jobsets(out)
    assert js["metadata"]["namespace"] == want


def test_namespace_flag_that_contradicts_the_object_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, "tj.yaml", trainjob_yaml(namespace="team-b"))
    code, out, err = run(["plan", "-f", path, "-n", "team-a"], capsys)
    assert (code, out) == (1, "")
    assert err == (
        'error: the namespace from the provided object "team-b" does not match the namespace '
        "\"team-a\". You must pass '--namespace=team-b' to perform this operation.\n"
    )


def test_a_runtime_given_with_f_wins_over_the_builtin_of_that_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rt = write(tmp_path, "rt.yaml", runtime_yaml(image="mine:2"))
    tj = write(tmp_path, "tj.yaml", trainjob_yaml())
    code, out, err = run(["plan", "-f", tj, "-f", rt], capsys)
    assert (code, err) == (0, "")
    (js,) = jobsets(out)
    assert node_image(js) == "mine:2"


def test_an_object_given_twice_is_an_error_and_nothing_is_planned(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    one = write(tmp_path, "one.yaml", runtime_yaml(image="first:1"))
    two = write(tmp_path, "two.yaml", runtime_yaml(image="second:1") + "---\n" + trainjob_yaml())
    code, out, err = run(["plan", "-f", one, "-f", two, "-f", two], capsys)
    assert (code, out) == (1, "")
    assert err == (
        f'error: ClusterTrainingRuntime "torch-distributed" is given in {one} and again in {two}\n'
        f'error: ClusterTrainingRuntime "torch-distributed" is given in {one} and again in {two}\n'
        f'error: TrainJob "job" in namespace "default" is given twice in {two}\n'
    )


def test_the_same_name_in_two_namespaces_is_two_objects(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = trainjob_yaml(namespace="a") + "---\n" + trainjob_yaml(namespace="b")
    code, out, err = run(["plan", "-f", write(tmp_path, "two.yaml", text)], capsys)
    assert (code, err) == (0, "")
    assert [js["metadata"]["namespace"] for js in jobsets(out)] == ["a", "b"]


def test_a_training_runtime_in_the_trainjob_namespace_is_used(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = (
        runtime_yaml("mine", kind="TrainingRuntime", image="ns:1")
        + "---\n"
        + trainjob_yaml(runtime="mine", kind="TrainingRuntime")
    )
    code, out, err = run(["plan", "-f", write(tmp_path, "all.yaml", text)], capsys)
    assert (code, err) == (0, "")
    (js,) = jobsets(out)
    assert node_image(js) == "ns:1"


def test_every_trainjob_in_the_input_is_planned_in_order(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = trainjob_yaml("first") + "---\n" + trainjob_yaml("second")
    code, out, err = run(["plan", "-f", write(tmp_path, "two.yaml", text)], capsys)
    assert (code, err) == (0, "")
    assert [js["metadata"]["name"] for js in jobsets(out)] == ["first", "second"]


def test_stdin_and_a_directory_are_read_like_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "manifests"
    folder.mkdir()
    write(folder, "a.yaml", trainjob_yaml("from-dir"))
    write(folder, "notes.txt", "not a manifest")
    monkeypatch.setattr("sys.stdin", io.StringIO(trainjob_yaml("from-stdin")))
    code, out, err = run(["plan", "-f", "-", "-f", str(folder)], capsys)
    assert (code, err) == (0, "")
    assert [js["metadata"]["name"] for js in jobsets(out)] == ["from-stdin", "from-dir"]


def test_yaml_anchors_and_aliases_are_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    aliased = (
        trainjob_yaml() + "  trainer:\n    command: &cmd [torchrun, train.py]\n    args: *cmd\n"
    )
    plain = aliased.replace("&cmd ", "").replace("*cmd", "[torchrun, train.py]")
    code, out, err = run(["plan", "-f", write(tmp_path, "alias.yaml", aliased)], capsys)
    assert (code, err) == (0, "")
    assert out == run(["plan", "-f", write(tmp_path, "plain.yaml", plain)], capsys)[1]
    assert "args:\n              - torchrun" in out


def test_a_missing_file_is_one_kubectl_line(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(["plan", "-f", "no/such.yaml"], capsys)
    assert (code, out, err) == (1, "", 'error: the path "no/such.yaml" does not exist\n')


@pytest.mark.parametrize("command", ["plan", "run", "apply", "delete"])
def test_an_empty_file_argument_is_kubectls_missing_path_not_the_current_directory(
    command: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``-f ''`` was ``Path("")``, the current directory: every manifest there was read (and
    ``run`` ran them). kubectl says the path does not exist; so does trainjob, storing nothing."""
    monkeypatch.setenv("TRAINJOB_HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    write(tmp_path, "job.yaml", trainjob_yaml())
    code, out, err = run([command, "-f", ""], capsys)
    assert (code, out, err) == (1, "", 'error: the path "" does not exist\n')
    assert not (tmp_path / "home" / "jobs").exists()


def test_num_nodes_zero_plans_with_the_webhooks_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Valid on a cluster (upstream's CRD minimum is 0), so planned; but it trains nothing, and
    ``plan`` says so as the webhook does (kubectl's ``Warning:`` line)."""
    text = trainjob_yaml() + "  trainer:\n    numNodes: 0\n"
    code, out, err = run(["plan", "-f", write(tmp_path, "zero.yaml", text)], capsys)
    assert code == 0
    assert err == f"Warning: {validation.NUM_NODES_ZERO_WARNING}\n"
    [jobset] = jobsets(out)
    assert jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["parallelism"] == 0


def test_an_invalid_runtime_is_reported_once_and_its_trainjobs_are_skipped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad_runtime = runtime_yaml("mine").replace(
        "- name: node\n                      image", "- name: main\n                      image"
    )
    text = bad_runtime + "---\n" + trainjob_yaml(runtime="mine")
    code, out, err = run(["plan", "-f", write(tmp_path, "all.yaml", text)], capsys)
    assert (code, out) == (1, "")
    assert err == (
        'The ClusterTrainingRuntime "mine" is invalid: '
        "spec.template.spec.replicatedJobs[0].template.spec.template.spec.containers: "
        'Invalid value: [{"name":"main","image":"custom:1","resources":{}}]: '
        "must contain the required container for the ancestor: trainer\n"
    )


def test_version_prints_the_package_version(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(["version"], capsys)
    assert (code, err) == (0, "")
    assert out == f"trainjob {trainjob.__version__} (trainer.kubeflow.org/v1alpha1)\n"


NUM_NODES = FieldError.invalid("spec.trainer.numNodes", -1, "should be greater than or equal to 0")
NAME = FieldError.required("metadata.name", "name or generateName is required")


@pytest.mark.parametrize(
    ("err", "want"),
    [
        pytest.param(
            InvalidError([NUM_NODES], "TrainJob.trainer.kubeflow.org", "x"),
            'The TrainJob "x" is invalid: spec.trainer.numNodes: Invalid value: -1: '
            "should be greater than or equal to 0\n",
            id="one error stays on the head line",
        ),
        pytest.param(
            InvalidError([NAME, NUM_NODES, NUM_NODES], "TrainJob.trainer.kubeflow.org", "x"),
            'The TrainJob "x" is invalid: \n'
            "* metadata.name: Required value: name or generateName is required\n"
            "* spec.trainer.numNodes: Invalid value: -1: should be greater than or equal to 0\n",
            id="several errors are bullets and repeats are printed once",
        ),
        pytest.param(
            InvalidError([NAME], "ClusterTrainingRuntime.trainer.kubeflow.org", ""),
            'The ClusterTrainingRuntime "" is invalid: '
            "metadata.name: Required value: name or generateName is required\n",
            id="the kind is printed without its group",
        ),
        pytest.param(
            InvalidError([NAME]),
            "The request is invalid: metadata.name: Required value: "
            "name or generateName is required\n",
            id="without a kind it is the request that is invalid",
        ),
    ],
)
def test_invalid_errors_print_as_kubectl_prints_an_invalid_status(
    err: InvalidError, want: str
) -> None:
    assert invalid_message(err) == want


def test_the_pages_that_name_the_runtime_image_and_the_torch_pin_say_what_the_code_has() -> None:
    """``plan`` shows the built-in runtime's image (upstream's torch); docs/local-backend.md says
    why that is not the torch a local job runs, naming both: both names must stay the real ones."""
    import re
    import tomllib

    repo = ROOT
    manifest = (repo / "manifests" / "runtimes" / "torch-distributed.yaml").read_text()
    image = re.search(r"image: (pytorch/pytorch:\S+)", manifest)
    assert image is not None
    extras = tomllib.loads((repo / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    pin = next(d for d in extras["torch"] if d.startswith("torch==")).removeprefix("torch==")
    page = (repo / "docs" / "local-backend.md").read_text()
    assert f"`{image.group(1)}`" in page
    assert f"`trainjob[torch]` pins {pin}" in page
    assert image.group(1).split(":")[1].split("-")[0] in PLAN_HELP
