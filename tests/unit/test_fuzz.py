"""Property tests: arbitrary input never escapes as anything but a field error.

* Well-typed TrainJobs (names, node counts, envs incl. reserved names, resources with random
  quantities, runtime patches on random jobs/containers, initializers, v2.0/v2.1 legacy fields,
  suspend) against every built-in runtime: ``validate`` returns a list, ``compile`` either returns
  a Plan or raises :class:`InvalidError`; a Plan is deterministic and serialises to YAML and JSON.
* Arbitrary JSON-like documents through :func:`trainjob.api.load.parse` raise only InvalidError,
  and any text given to ``trainjob plan`` ends in errors it can print (never an exception).

Kept to a few seconds: ``max_examples`` is small and the runtimes are loaded once.
"""

from __future__ import annotations

import json
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trainjob.api import constants as c
from trainjob.api.load import KINDS, parse
from trainjob.api.trainer import TrainJob
from trainjob.cli import plan
from trainjob.errors import InvalidError, TrainJobError
from trainjob.executor import catalog
from trainjob.runtime import compile, validate

Obj = dict[str, Any]

RUNTIMES = sorted(catalog.builtin_runtimes().items())
SETTINGS = settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None
)

JOBS = ["node", "launcher", "dataset-initializer", "model-initializer", "worker"]
CONTAINERS = ["node", "dataset-initializer", "model-initializer", "sidecar", "init"]
ENV_NAMES = [
    "EPOCHS",
    "LR",
    *c.TORCH_RESERVED_ENVS,
    *c.MPI_RESERVED_ENVS,
    "DMLC_TASK_ID",
    "STORAGE_URI",
    "ACCESS_TOKEN",
]

names = st.one_of(
    st.from_regex(r"\A[a-z]([-a-z0-9]{0,20}[a-z0-9])?\Z"),
    st.text(min_size=1, max_size=70),
)
quantities = st.one_of(
    st.sampled_from(["1", "2", "500m", "1.5", "2Gi", "100Mi", "1e3", "0", "-1", "lots", "", "1Qi"]),
    st.integers(-2, 16),
    st.floats(allow_nan=False, allow_infinity=False, width=32),
    st.text(max_size=6),
)
resource_list = st.dictionaries(
    st.sampled_from(["cpu", "memory", "nvidia.com/gpu", "amd.com/gpu", "example.com/fpga"]),
    quantities,
    max_size=3,
)
resources = st.fixed_dictionaries({}, optional={"requests": resource_list, "limits": resource_list})
env_var = st.fixed_dictionaries(
    {"name": st.one_of(st.sampled_from(ENV_NAMES), st.text(min_size=1, max_size=8))},
    optional={"value": st.text(max_size=10)},
)
envs = st.lists(env_var, max_size=4)
container_patch = st.fixed_dictionaries(
    {"name": st.sampled_from(CONTAINERS)},
    optional={
        "env": envs,
        "volumeMounts": st.just([{"name": "data", "mountPath": "/data"}]),
        "image": st.text(max_size=5),
    },
)
pod_spec_patch = st.fixed_dictionaries(
    {},
    optional={
        "nodeSelector": st.dictionaries(st.text(min_size=1, max_size=5), st.text(max_size=5)),
        "containers": st.lists(container_patch, max_size=2),
        "initContainers": st.lists(container_patch, max_size=1),
        "serviceAccountName": st.text(max_size=5),
    },
)
runtime_patch = st.fixed_dictionaries(
    {"manager": st.one_of(st.sampled_from(["a.io/x", "kueue.x-k8s.io/m"]), st.text(max_size=12))},
    optional={
        "trainingRuntimeSpec": st.fixed_dictionaries(
            {
                "template": st.fixed_dictionaries(
                    {},
                    optional={
                        "metadata": st.fixed_dictionaries(
                            {},
                            optional={
                                "labels": st.dictionaries(
                                    st.text(max_size=4), st.text(max_size=4), max_size=2
                                )
                            },
                        ),
                        "spec": st.fixed_dictionaries(
                            {},
                            optional={
                                "replicatedJobs": st.lists(
                                    st.fixed_dictionaries(
                                        {"name": st.sampled_from(JOBS)},
                                        optional={
                                            "template": st.fixed_dictionaries(
                                                {
                                                    "spec": st.fixed_dictionaries(
                                                        {
                                                            "template": st.fixed_dictionaries(
                                                                {"spec": pod_spec_patch}
                                                            )
                                                        }
                                                    )
                                                }
                                            )
                                        },
                                    ),
                                    max_size=2,
                                )
                            },
                        ),
                    },
                )
            }
        )
    },
)
initializer_cfg = st.fixed_dictionaries(
    {},
    optional={
        "storageUri": st.one_of(
            st.sampled_from(["hf://a/b", "s3://bucket/p", "", "no-scheme"]), st.text(max_size=10)
        ),
        "env": envs,
        "secretRef": st.fixed_dictionaries({"name": st.text(max_size=5)}),
    },
)
args = st.lists(
    st.one_of(
        st.sampled_from(
            [
                "model.lora_attn_modules=[q_proj]",
                "model.quantize_base=True",
                "model.use_dora=True",
                "output_dir=/x",
                "epochs=1",
            ]
        ),
        st.text(max_size=8),
    ),
    max_size=3,
)
trainer = st.fixed_dictionaries(
    {},
    optional={
        "image": st.text(max_size=10),
        "command": st.one_of(st.just(["tune", "run"]), st.lists(st.text(max_size=6), max_size=3)),
        "args": args,
        "env": envs,
        "numNodes": st.integers(-2, 6),
        "numProcPerNode": st.one_of(
            st.integers(-1, 9), st.sampled_from(["auto", "cpu", "gpu", "3", "many"])
        ),
        "resourcesPerNode": resources,
    },
)
target_jobs = st.lists(
    st.fixed_dictionaries({"name": st.sampled_from(JOBS)}), min_size=1, max_size=2
)
spec = st.fixed_dictionaries(
    {},
    optional={
        "trainer": trainer,
        "initializer": st.fixed_dictionaries(
            {}, optional={"dataset": initializer_cfg, "model": initializer_cfg}
        ),
        "runtimePatches": st.lists(runtime_patch, max_size=3),
        "suspend": st.booleans(),
        "activeDeadlineSeconds": st.integers(-1, 100),
        "managedBy": st.sampled_from([c.MANAGED_BY_TRAINER, c.MANAGED_BY_MULTIKUEUE, "x/y"]),
        # v2.0/v2.1 fields
        "labels": st.dictionaries(st.text(min_size=1, max_size=4), st.text(max_size=4), max_size=2),
        "annotations": st.dictionaries(
            st.text(min_size=1, max_size=4), st.text(max_size=4), max_size=2
        ),
        "podSpecOverrides": st.lists(
            st.fixed_dictionaries(
                {"targetJobs": target_jobs},
                optional={"containers": st.lists(container_patch, max_size=2)},
            ),
            max_size=2,
        ),
        "podTemplateOverrides": st.lists(
            st.fixed_dictionaries({"targetJobs": target_jobs}, optional={"spec": pod_spec_patch}),
            max_size=2,
        ),
    },
)


def trainjob_on(name: str, body: Obj, runtime_name: str) -> TrainJob | None:
    doc = {
        "apiVersion": c.API_VERSION,
        "kind": c.TRAINJOB_KIND,
        "metadata": {"name": name, "namespace": "default"},
        "spec": {**body, "runtimeRef": {"name": runtime_name}},
    }
    try:
        tj = parse(doc)
    except InvalidError:
        return None  # a shape the models refuse (e.g. an env name that is not a string)
    assert isinstance(tj, TrainJob)
    return tj


@SETTINGS
@given(name=names, body=spec)
def test_compile_raises_only_field_errors_and_plans_are_deterministic(name: str, body: Obj) -> None:
    for runtime_name, rt in RUNTIMES:
        tj = trainjob_on(name, body, runtime_name)
        if tj is None:
            continue
        errors = validate(tj, rt)
        assert isinstance(errors, list)
        try:
            plan = compile(tj, rt)
        except InvalidError as e:
            assert e.errors, "an InvalidError always names at least one field"
            continue
        again = compile(tj, rt)
        assert plan == again
        text = plan.to_yaml()
        assert text == again.to_yaml()
        assert list(yaml.safe_load_all(text)) == json.loads(plan.to_json())


json_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=8)
)
FIELD_NAMES = [
    "metadata", "name", "spec", "runtimeRef", "trainer", "numNodes", "env", "value", "template",
    "replicatedJobs", "containers", "mlPolicy", "torch", "mpi", "podGroupPolicy", "initializer",
    "dataset", "runtimePatches", "manager", "trainingRuntimeSpec", "resourcesPerNode", "labels",
]  # fmt: skip
json_values = st.recursive(
    json_scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(
            st.one_of(st.sampled_from(FIELD_NAMES), st.text(max_size=6)), inner, max_size=4
        ),
    ),
    max_leaves=25,
)
documents = st.one_of(
    json_values,
    st.builds(
        lambda kind, rest: {**rest, "apiVersion": c.API_VERSION, "kind": kind},
        st.sampled_from(sorted(KINDS)),
        st.dictionaries(st.sampled_from(["metadata", "spec", "status"]), json_values, max_size=3),
    ),
)


@settings(SETTINGS, max_examples=300)
@given(doc=documents)
def test_parse_raises_only_field_errors(doc: Any) -> None:
    try:
        parse(doc)
    except InvalidError as e:
        assert e.errors


yaml_texts = st.one_of(
    st.text(max_size=80),
    documents.map(lambda d: yaml.safe_dump(d, sort_keys=False)),
    st.lists(
        st.sampled_from(["a:", " b", "- c", "{", "]", "'", '"', "---", "\t", ": d", "2024-13-45"])
    ).map("\n".join),
)


@settings(SETTINGS, max_examples=200)
@given(text=yaml_texts)
def test_plan_of_any_text_reports_errors_and_never_raises(text: str, tmp_path_factory: Any) -> None:
    path = tmp_path_factory.mktemp("fuzz") / "input.yaml"
    path.write_text(text)
    result = plan.plan_files([str(path)])
    assert all(isinstance(e, TrainJobError) for e in result.errors)
    assert result.errors or result.plans
