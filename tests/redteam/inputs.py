"""The bad inputs: manifests through ``trainjob plan`` and ``trainjob run``, oversized reads, and
wrong arguments to the SDK. Each must end as one clear error with nothing stored or left running.

* every file of ``tests/unit/corpus/`` through ``plan -f`` and ``run -f`` (one validation path:
  ``run`` refuses what ``plan`` refuses, with the same lines), and of ``tests/unit/corpus-local/``
  (what only this machine cannot run: caps) through ``run -f``;
* unbounded reads: ``-f /dev/zero``, ``-f /dev/urandom``, a 50 MB manifest, an endless stdin;
* ``TrainerClient`` methods called with arguments of the wrong type or value.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.redteam.cases import Case, Outcome, cli, judge_cli, judge_sdk

UNIT = Path(__file__).resolve().parent.parent / "unit"
CORPUS = UNIT / "corpus"
CORPUS_LOCAL = UNIT / "corpus-local"


def corpus_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.suffix in (".yaml", ".json"))


# issue-11 class of a corpus file by its name; the rest of the corpus are runtime/TrainJob
# rules that ``run`` skipped before (class 2).
_CLASS_OF = {
    "cpu-": 3, "memory-": 3, "gpu-": 3, "resource": 3, "request-": 3, "env-": 3,
    "initializer-env-value": 3, "command-with-nul": 3, "name-with-nul": 8,
    "namespace-with-nul": 8, "label-with-escape": 10,
}  # fmt: skip


def class_of(path: Path) -> int:
    for prefix, cls in _CLASS_OF.items():
        if path.stem.startswith(prefix):
            return cls
    return 3 if path.parent == CORPUS_LOCAL else 2


def _cli_case(argv: list[str], stdin: str | None = None) -> Callable[[Path], Outcome]:
    def run(work: Path) -> Outcome:
        home = work / "home"
        return judge_cli(cli(argv, home, stdin), home)

    return run


def _big_manifest(work: Path, mb: int = 50) -> Path:
    """A TrainJob whose env makes it ``mb`` MB: valid YAML, absurdly large."""
    path = work / "big.yaml"
    line = "      - {name: PADDING_%08d, value: '%s'}\n"
    with path.open("w") as f:
        f.write(
            "apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\nmetadata: {name: big}\n"
            "spec:\n  runtimeRef: {name: torch-distributed}\n  trainer:\n    env:\n"
        )
        pad = "x" * 200
        for i in range(mb * 1024 * 1024 // 230):
            f.write(line % (i, pad))
    return path


def _big_file_case(verb: str) -> Callable[[Path], Outcome]:
    def run(work: Path) -> Outcome:
        home = work / "home"
        return judge_cli(cli([verb, "-f", str(_big_manifest(work))], home), home)

    return run


def _big_stdin_case(verb: str) -> Callable[[Path], Outcome]:
    def run(work: Path) -> Outcome:
        home = work / "home"
        text = _big_manifest(work).read_text()
        return judge_cli(cli([verb, "-f", "-"], home, stdin=text), home)

    return run


def cli_cases() -> list[Case]:
    out: list[Case] = []
    for path in corpus_files(CORPUS):
        for verb in ("plan", "run"):
            out.append(
                Case(
                    f"{verb}-{path.stem}",
                    class_of(path),
                    "input",
                    _cli_case([verb, "-f", str(path)]),
                )
            )
    for path in corpus_files(CORPUS_LOCAL):
        out.append(
            Case(f"run-{path.stem}", class_of(path), "input", _cli_case(["run", "-f", str(path)]))
        )
    for verb in ("plan", "run"):
        for dev in ("/dev/zero", "/dev/urandom"):
            out.append(Case(f"{verb}-{dev[5:]}", 5, "input", _cli_case([verb, "-f", dev])))
        out.append(Case(f"{verb}-a-50-mb-manifest", 5, "input", _big_file_case(verb)))
        out.append(Case(f"{verb}-a-50-mb-stdin", 5, "input", _big_stdin_case(verb)))
    return out


# -- the SDK ----------------------------------------------------------------------------------


def train_fn() -> None:
    print("trained")


def train_with_args(lr: float = 0.1) -> None:
    print("lr", lr)


def _client(work: Path) -> Any:
    from trainjob import TrainerClient
    from trainjob.client.config import LocalProcessBackendConfig

    return TrainerClient(LocalProcessBackendConfig(home=work / "home", cwd=str(work)))


def _sdk_case(call: Callable[[Any], Any]) -> Callable[[Path], Outcome]:
    def run(work: Path) -> Outcome:
        client = _client(work)
        return judge_sdk(functools.partial(call, client), work / "home")

    return run


def _custom(**kwargs: Any) -> Callable[[Any], Any]:
    def call(client: Any) -> Any:
        from trainjob import CustomTrainer

        kwargs.setdefault("func", train_fn)
        return client.train(runtime="torch-distributed", trainer=CustomTrainer(**kwargs))

    return call


def _tune(**kwargs: Any) -> Callable[[Any], Any]:
    def call(client: Any) -> Any:
        from trainjob import BuiltinTrainer, TorchTuneConfig

        return client.train(
            runtime="torchtune-qwen2.5-1.5b", trainer=BuiltinTrainer(TorchTuneConfig(**kwargs))
        )

    return call


SDK_CALLS: dict[str, Callable[[Any], Any]] = {
    "resources-per-node-is-a-string": _custom(resources_per_node="cpu=2"),
    "resources-per-node-is-a-list": _custom(resources_per_node=["cpu", 2]),
    "resources-per-node-value-is-a-list": _custom(resources_per_node={"cpu": [1]}),
    "resources-per-node-negative-cpu": _custom(resources_per_node={"cpu": -1}),
    "resources-per-node-negative-cpu-string": _custom(resources_per_node={"cpu": "-1"}),
    "resources-per-node-ten-to-the-thirty-cpus": _custom(resources_per_node={"cpu": 10**30}),
    "resources-per-node-half-a-gpu": _custom(resources_per_node={"gpu": 0.5}),
    "resources-per-node-empty-name": _custom(resources_per_node={"": 1}),
    "resources-per-node-int-key": _custom(resources_per_node={1: 2}),
    "resources-per-node-not-a-quantity": _custom(resources_per_node={"memory": "lots"}),
    "resources-per-node-nan": _custom(resources_per_node={"cpu": float("nan")}),
    "packages-to-install-is-a-string": _custom(packages_to_install="numpy"),
    "packages-to-install-of-ints": _custom(packages_to_install=[1, 2]),
    "packages-to-install-with-an-option": _custom(packages_to_install=["--index-url=http://evil"]),
    "pip-index-urls-is-a-string": _custom(
        packages_to_install=["numpy"], pip_index_urls="https://pypi.org/simple"
    ),
    "pip-index-urls-empty": _custom(packages_to_install=["numpy"], pip_index_urls=[]),
    "pip-index-urls-of-ints": _custom(packages_to_install=["numpy"], pip_index_urls=[1]),
    "num-nodes-is-a-string": _custom(num_nodes="2"),
    "num-nodes-is-a-float": _custom(num_nodes=2.5),
    "num-nodes-is-a-bool": _custom(num_nodes=True),
    "num-nodes-negative": _custom(num_nodes=-1),
    "num-nodes-a-million": _custom(num_nodes=10**6),
    "env-is-a-list": _custom(env=["A=1"]),
    "env-name-with-equals": _custom(env={"A=B": "1"}),
    "env-value-is-a-dict": _custom(env={"A": {"x": 1}}),
    "env-value-with-nul": _custom(env={"A": "x\0y"}),
    "env-int-key": _custom(env={1: "x"}),
    "func-is-a-string": _custom(func="train"),
    "func-is-a-lambda": _custom(func=lambda: None),
    "func-args-is-a-string": _custom(func=train_with_args, func_args="lr=0.1"),
    "func-args-not-a-literal": _custom(func=train_with_args, func_args={"lr": object()}),
    "func-args-unknown-argument": _custom(func=train_with_args, func_args={"epochs": 1}),
    "image-is-a-number": _custom(image=123),
    "runtime-is-a-number": lambda cl: cl.train(runtime=123),
    "runtime-unknown": lambda cl: cl.train(runtime="no-such-runtime"),
    "trainer-is-a-string": lambda cl: cl.train(
        runtime="torch-distributed", trainer="CustomTrainer"
    ),
    "initializer-is-a-string": lambda cl: cl.train(
        runtime="torch-distributed", initializer="hf://x"
    ),
    "options-is-not-a-list": lambda cl: cl.train(runtime="torch-distributed", options="Name"),
    "options-holds-a-number": lambda cl: cl.train(runtime="torch-distributed", options=[1]),
    "builtin-config-is-a-dict": lambda cl: cl.train(
        runtime="torchtune-qwen2.5-1.5b",
        trainer=__import__("trainjob").BuiltinTrainer({"epochs": 1}),
    ),
    "builtin-epochs-is-a-string": _tune(epochs="3"),
    "builtin-batch-size-zero": _tune(batch_size=0),
    "builtin-dtype-unknown": _tune(dtype="fp16"),
    "builtin-peft-config-is-a-dict": _tune(peft_config={"lora_rank": 8}),
    "builtin-num-nodes-is-a-string": _tune(num_nodes="1"),
    "get-job-logs-step-is-a-number": lambda cl: cl.get_job_logs("some-job", step=5),
    "get-job-logs-name-is-a-number": lambda cl: cl.get_job_logs(5),
    "get-job-logs-follow-is-a-string": lambda cl: cl.get_job_logs("some-job", follow="yes"),
    "wait-status-is-a-string": lambda cl: cl.wait_for_job_status("some-job", status="Complete"),
    "wait-status-unknown": lambda cl: cl.wait_for_job_status("some-job", status={"Done"}),
    "wait-timeout-is-a-string": lambda cl: cl.wait_for_job_status("some-job", timeout="10"),
    "wait-timeout-negative": lambda cl: cl.wait_for_job_status("some-job", timeout=-1),
    "wait-polling-interval-zero": lambda cl: cl.wait_for_job_status("some-job", polling_interval=0),
    "get-job-name-is-a-number": lambda cl: cl.get_job(123),
    "get-job-name-with-nul": lambda cl: cl.get_job("job\0x"),
    "delete-job-name-is-none": lambda cl: cl.delete_job(None),
    "get-job-events-name-is-none": lambda cl: cl.get_job_events(None),
    "get-runtime-name-is-a-number": lambda cl: cl.get_runtime(5),
    "list-jobs-runtime-is-a-string": lambda cl: cl.list_jobs(runtime="torch-distributed"),
    "backend-config-is-a-string": lambda cl: type(cl)(backend_config="local"),
}


def sdk_cases() -> list[Case]:
    return [Case(f"sdk-{name}", 4, "input", _sdk_case(call)) for name, call in SDK_CALLS.items()]


def cases() -> list[Case]:
    return cli_cases() + sdk_cases()
