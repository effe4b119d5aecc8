"""Upstream's controller as the oracle: the same corpus, shown to upstream's
``trainer-controller-manager`` v2.3.0 and to trainjob's controller one after the other on one real
kube-apiserver, must give the same objects, statuses, events and admission answers, after
normalising ids, times and generated key bytes (``oracle/compare.py``).

The apiserver is this module's own (``hack/testenv`` in a private state dir, JobSet and PodGroup
CRDs installed), so each controller runs with its own CRDs installed (upstream's from its module
zip, then trainjob's ``manifests/crds``) and its own webhooks registered, with nothing else
watching. Phase 1: upstream's CRDs, upstream's controller and webhooks, upstream's built-in
runtimes, every case in its own namespace ``diff-u-NNN``; wait until nothing changes. Phase 2: the
same with trainjob's (``diff-t-NNN``). The corpus is ``oracle/corpus.py``: upstream's examples
and runtimes from its module zip, and cases written for every plugin and option.

Every case ends as one of: **equal**; **refused by both** (with the same message); a
**deliberate difference**, listed in :data:`DELIBERATE` with its reason and the paths where it
shows (a listed case that no longer differs fails the test, so the list stays true); anything
else fails the test with the differences. The table is printed (``pytest -s`` or ``-rA`` shows
it; it is also written to ``$TRAINJOB_DIFF_TABLE`` when set).

Needs Go (the build: ``hack/build-upstream-controller.sh``, cached by version).
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import yaml
from tests.integration import upstream_harness
from tests.integration.controller_harness import start_controller, wait_for
from tests.integration.oracle import compare, corpus
from tests.integration.oracle.run import Api, Phase, delete_cluster_runtimes, install

from trainjob.api.trainer import TrainJob
from trainjob.kube import Client
from trainjob.runtime.plugins import flux

if TYPE_CHECKING:
    from tests.integration.conftest import ControlPlane

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
Obj = dict[str, Any]


@dataclass(frozen=True)
class Deliberate:
    """A difference kept on purpose: why, and the diff paths where it shows (``*`` wildcards)."""

    reason: str
    paths: tuple[str, ...]


ADMITTED_UPSTREAM = ("admission.*", "objects*", "events*")

DELIBERATE: dict[str, Deliberate] = {
    # v2.0/v2.1 fields: DESIGN.md's API version policy (accept them, translated).
    "legacy-pod-template-overrides": Deliberate(
        "v2.1 podTemplateOverrides become a runtimePatch (DESIGN: any v2.x manifest runs); "
        "upstream's v2.3 CRD prunes the field with a warning and ignores it",
        (
            "admission.create TrainJob/job.warnings",
            "objects.TrainJob/job.spec.runtimePatches",
            "objects.JobSet/job.spec.replicatedJobs[0].template.spec.template.spec.nodeSelector",
        ),
    ),
    "legacy-labels": Deliberate(
        "v2.0 labels/annotations become a runtimePatch on the JobSet's metadata; upstream's v2.3 "
        "CRD prunes them with a warning",
        (
            "admission.create TrainJob/job.warnings",
            "objects.TrainJob/job.spec.runtimePatches",
            "objects.JobSet/job.metadata.*",
        ),
    ),
    "legacy-numproc-string": Deliberate(
        "a v2.0/v2.1 string numProcPerNode (auto) is accepted; upstream's defaulting webhook "
        "fails to decode it into int32 and refuses the TrainJob",
        ADMITTED_UPSTREAM,
    ),
    # Stricter than upstream where upstream builds something that cannot run.
    "torch-numproc-zero": Deliberate(
        "numProcPerNode 0 is refused (CRD minimum 1); upstream's v2.3 CRD admits it and builds "
        "PET_NPROC_PER_NODE=0, which torchrun refuses in every pod",
        ADMITTED_UPSTREAM,
    ),
    "rjob-name-not-dns1035": Deliberate(
        "a runtime whose replicatedJob name is no DNS-1035 label is refused (so is its TrainJob: "
        "no runtime); upstream admits both and JobSet's webhook refuses the JobSet at every "
        "reconcile (this apiserver runs no JobSet webhook, so upstream's JobSet is made here)",
        ADMITTED_UPSTREAM,
    ),
    "name-too-long-for-pods": Deliberate(
        "a TrainJob whose pods JobSet would name past 63 characters is refused with JobSet's "
        "message; upstream admits it and JobSet's webhook refuses the JobSet at every reconcile",
        ADMITTED_UPSTREAM,
    ),
    "torch-numnodes-zero": Deliberate(
        "numNodes 0 is admitted as upstream admits it (CRD minimum 0), with a warning that the "
        "trainer job has no pods and nothing trains; upstream says nothing",
        ("admission.create TrainJob/job.warnings",),
    ),
    "patch-unknown-job": Deliberate(
        "a runtimePatch naming a job the runtime lacks is refused at admission; upstream checks "
        "the already-patched template, admits it, and every reconcile fails (JobSet invalid: "
        "the patch's job has no containers)",
        ADMITTED_UPSTREAM,
    ),
    "patch-unknown-container": Deliberate(
        "a runtimePatch naming a container the runtime lacks is refused at admission; upstream "
        "admits it and builds a JobSet with an image-less container (every Job fails to create)",
        ADMITTED_UPSTREAM,
    ),
    "tune-1b-qlora-distributed": Deliberate(
        'QLoRA with numProcPerNode auto on 2 GPUs: upstream answers "auto" with \'must be auto '
        "or 1'; trainjob says what auto came to and what to set (issue 12)",
        ("admission.create TrainJob/job.message",),
    ),
    # trainjob's additions for what upstream leaves to the user.
    "jobset-passthrough": Deliberate(
        "a JobSet that can restart (failurePolicy.maxRestarts 3): the trainer's containers also "
        "get TRAINJOB_RESTART_ATTEMPT (the pod's restart-attempt annotation, downward API), so "
        "custom code resumes after a restart as it does locally (runtime/plugins/resume.py)",
        ("objects.JobSet/job.spec.replicatedJobs*.env*",),
    ),
    # What the reconciler does with input no webhook vetted.
    "nowebhook-kind-unknown": Deliberate(
        "an unknown runtimeRef kind: trainjob writes Failed/TrainingRuntimeNotSupported (what "
        "upstream's code means to do); upstream's reconcile panics on the nil runtime every try",
        ("objects.TrainJob/job.status*",),
    ),
    "nowebhook-runtime-missing": Deliberate(
        "a missing runtime: trainjob also says so in a RuntimeNotFound condition (and requeues "
        "the TrainJob when the runtime appears); upstream only emits the event",
        ("objects.TrainJob/job.status*",),
    ),
    "nowebhook-cluster-runtime-missing": Deliberate(
        "as nowebhook-runtime-missing, for a ClusterTrainingRuntime",
        ("objects.TrainJob/job.status*",),
    ),
    "nowebhook-reserved-env": Deliberate(
        "the reconcile applies the webhook's rules too (compile validates), so a TrainJob no "
        "webhook saw gets the same refusal as an event; upstream builds the JobSet and silently "
        "replaces the user's PET_NNODES",
        ("objects.JobSet/job*", "events*"),
    ),
    "rt-flux-distributed-bare": Deliberate(
        "Flux without spec.trainer: upstream's plugin dereferences the nil trainer and its "
        "reconcile panics every try (nothing is created); trainjob runs the runtime's command "
        "on mlPolicy.numNodes pods",
        ("objects*", "events*"),
    ),
}


# -- the private control plane -------------------------------------------------------------------
@dataclass
class Plane:
    state: Path
    kubeconfig: Path
    env_json: Path


@pytest.fixture(scope="module")
def upstream() -> upstream_harness.Build:
    if shutil.which("go") is None:
        pytest.skip("'go' is not on PATH: cannot build the upstream controller")
    return upstream_harness.build()


@pytest.fixture(scope="module")
def plane(control_plane: ControlPlane, upstream: upstream_harness.Build) -> Iterator[Plane]:
    """Its own etcd + kube-apiserver (the session's control plane built the binaries)."""
    state = Path(tempfile.mkdtemp(prefix="trainjob-diff-"))
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    env["TRAINJOB_TESTENV_DIR"] = str(state / "cp")
    volcano = state / "volcano-podgroups.yaml"
    volcano.write_text(yaml.safe_dump(upstream_harness.VOLCANO_PODGROUP_CRD))
    kubeconfig = state / "kubeconfig"
    testenv = str(REPO / "hack" / "testenv")
    up = [testenv, "up", "--no-build", "--kubeconfig", str(kubeconfig),
          "--crds", str(upstream.podgroup_crd), "--crds", str(volcano)]  # fmt: skip
    out = subprocess.run(up, env=env, cwd=REPO, capture_output=True, text=True)
    try:
        if out.returncode != 0:
            pytest.fail(
                f"hack/testenv up failed (exit {out.returncode}):\n"
                f"{out.stdout[-3000:]}\n{out.stderr[-3000:]}"
            )
        yield Plane(state, kubeconfig, state / "cp" / "env.json")
    finally:
        subprocess.run([testenv, "down"], env=env, cwd=REPO, capture_output=True, check=False)
        if os.environ.get("TRAINJOB_TESTENV_KEEP") != "1":
            shutil.rmtree(state, ignore_errors=True)


def check_flux_curves(plane: Plane, upstream: upstream_harness.Build) -> list[str]:
    """Upstream's Flux CURVE certificates, byte for byte, are what trainjob derives from the same
    TrainJob uid (the differential table compares them with the keys normalised away)."""
    api = Api.from_env_json(plane.env_json)
    try:
        owners = {
            (tj["metadata"]["namespace"], tj["metadata"]["name"]): tj["metadata"]["uid"]
            for tj in api.items("/apis/trainer.kubeflow.org/v1alpha1/trainjobs")
        }
        errors, checked = [], 0
        for secret in api.items("/api/v1/secrets"):
            meta = secret["metadata"]
            if not meta["namespace"].startswith("diff-u-") or not meta["name"].endswith(
                "-flux-curve"
            ):
                continue
            owner = meta["ownerReferences"][0]["name"]
            tj = TrainJob.model_validate(
                {"metadata": {"name": owner, "uid": owners[(meta["namespace"], owner)]},
                 "spec": {"runtimeRef": {"name": "x"}}}
            )  # fmt: skip
            got = base64.b64decode(secret["data"]["curve.cert"]).decode()
            checked += 1
            if got != flux.curve_certificate(tj):
                errors.append(f"{meta['namespace']}/{meta['name']}")
        assert checked >= 3, f"only {checked} upstream Flux curve Secrets found"
        return errors
    finally:
        api.close()


# -- classification ------------------------------------------------------------------------------
@dataclass
class Row:
    case: corpus.Case
    verdict: str  # equal | refused by both | deliberate difference | DIFFERENT | STALE
    lines: list[str]
    note: str = ""


def path_matches(path: str, pattern: str) -> bool:
    """``*`` matches any run of characters; everything else (``[0]`` too) is literal."""
    return re.fullmatch(".*".join(re.escape(p) for p in pattern.split("*")), path) is not None


def classify(case: corpus.Case, u: compare.Outcome, t: compare.Outcome) -> Row:
    lines = compare.diff(u.as_obj(), t.as_obj())
    listed = DELIBERATE.get(case.name)
    if not lines:
        if listed is not None:
            return Row(case, "STALE", [], f"listed as deliberate but equal now: {listed.reason}")
        return Row(case, "refused by both" if u.refused and t.refused else "equal", [])
    if listed is not None:
        path_of = [ln.split(": ", 1)[0] for ln in lines]
        unexplained = [
            ln
            for ln, p in zip(lines, path_of, strict=True)
            if not any(path_matches(p, pat) for pat in listed.paths)
        ]
        if not unexplained:
            return Row(case, "deliberate difference", lines, listed.reason)
        return Row(case, "DIFFERENT", unexplained, "beyond the listed deliberate difference")
    return Row(case, "DIFFERENT", lines)


def table(rows: list[Row]) -> str:
    width = max(len(r.case.name) for r in rows)
    out = [f"{'CASE':<{width}}  VERDICT                 SOURCE / NOTE"]
    for r in rows:
        note = r.note or r.case.what
        out.append(f"{r.case.name:<{width}}  {r.verdict:<22}  {note}")
        for ln in r.lines[:12] if r.verdict in ("DIFFERENT", "STALE") else ():
            out.append(f"{'':<{width}}    {ln}")
    counts: dict[str, int] = {}
    for r in rows:
        counts[r.verdict] = counts.get(r.verdict, 0) + 1
    out.append("")
    out.append(f"{len(rows)} cases: " + ", ".join(f"{n} {v}" for v, n in sorted(counts.items())))
    return "\n".join(out)


# -- the test ------------------------------------------------------------------------------------
def test_trainjob_does_what_upstream_does(
    plane: Plane, upstream: upstream_harness.Build, capsys: pytest.CaptureFixture[str]
) -> None:
    cases = corpus.all_cases(upstream.module)
    builtins = corpus.upstream_runtimes(upstream.module)
    api = Api.from_env_json(plane.env_json)
    kube = Client.from_config(str(plane.kubeconfig))
    try:
        # Phase 1: upstream.
        upstream_harness.swap_crds(kube, upstream.crds)
        up = upstream_harness.start(upstream, plane.kubeconfig, kube)
        try:
            wait_for(
                lambda: upstream_harness.webhooks_effective(kube),
                timeout=90,
                what="upstream's webhooks",
            )
            installed_u = install(api, builtins)
            outcomes_u = Phase(api, cases, "u").run()
            assert up.alive(), f"upstream controller exited; log:\n{up.log()[-6000:]}"
        finally:
            up.stop()
        delete_cluster_runtimes(api)

        # Phase 2: trainjob.
        upstream_harness.swap_crds(kube, sorted((REPO / "manifests" / "crds").glob("*.yaml")))
        # with the status server off, as upstream's TrainJobStatus feature gate is by default
        # (on, trainjob adds upstream's env, projected volume and CA ConfigMap to each job)
        ctl = start_controller(plane, "--no-status-server")
        try:
            wait_for(
                lambda: upstream_harness.webhooks_effective(kube),
                timeout=90,
                what="trainjob's webhooks",
            )
            installed_t = install(api, builtins)
            outcomes_t = Phase(api, cases, "t").run()
            assert ctl.proc.poll() is None, f"trainjob controller exited; log:\n{ctl.log()[-6000:]}"
        finally:
            ctl.stop()
    finally:
        api.close()
        kube.close()

    curve_errors = check_flux_curves(plane, upstream)
    builtin_diff = compare.diff(
        [a.as_obj() for a in installed_u], [a.as_obj() for a in installed_t]
    )
    rows = [classify(c, outcomes_u[c.name], outcomes_t[c.name]) for c in cases]
    report = table(rows)
    if os.environ.get("TRAINJOB_DIFF_TABLE"):
        Path(os.environ["TRAINJOB_DIFF_TABLE"]).write_text(
            report
            + "\n\n"
            + json.dumps(
                {
                    r.case.name: {"upstream": outcomes_u[r.case.name].as_obj(),
                                  "trainjob": outcomes_t[r.case.name].as_obj(),
                                  "diff": compare.diff(outcomes_u[r.case.name].as_obj(),
                                                       outcomes_t[r.case.name].as_obj())}
                    for r in rows
                },
                indent=1,
                sort_keys=True,
            )
        )  # fmt: skip
    with capsys.disabled():
        print("\n\ndifferential test: upstream trainer-controller-manager "
              f"{upstream_harness.VERSION} vs trainjob\n{report}\n")  # fmt: skip
    bad = [r for r in rows if r.verdict in ("DIFFERENT", "STALE")]
    assert curve_errors == [], "Flux CURVE certificates differ from upstream's for the same uid"
    assert builtin_diff == [], f"installing upstream's built-in runtimes differs: {builtin_diff}"
    assert bad == [], "unexplained differences (see the table above)"
    assert len(cases) >= 100
