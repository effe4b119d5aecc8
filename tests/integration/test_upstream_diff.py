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
import copy
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
from trainjob.core import trainerstatus
from trainjob.kube import Client
from trainjob.runtime.plugins import flux

if TYPE_CHECKING:
    from tests.integration.conftest import ControlPlane

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
TRAINER_API = "/apis/trainer.kubeflow.org/v1alpha1"
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


# With progress reports on, every trainer pod template differs the same way: how each controller
# tells a trainer where its status server is and which CA to trust. Normalised away on both sides
# (everything else of the env, the projected token and the mount still compares), for this reason.
STATUS_SERVER = (
    "each controller's KUBEFLOW_TRAINER_SERVER_URL names its own Service; upstream's trainer "
    "pods read the CA from a ConfigMap <trainjob>-tls-config it writes per TrainJob, trainjob's "
    "from an annotation of the pod template through the downward API (one write less per "
    "TrainJob: docs/controller-install.md, Resources)"
)
URL_HOST = re.compile(r"^https://[^/]+")


def normalise_status_server(outcome: Obj) -> Obj:
    """``outcome`` (:meth:`compare.Outcome.as_obj`) without :data:`STATUS_SERVER`'s differences:
    the URL's host, the CA's source in the token volume, trainjob's CA annotation, upstream's
    ``-tls-config`` ConfigMaps."""
    out = copy.deepcopy(outcome)
    objects: Obj = out["objects"]
    for key in [k for k in objects if k.startswith("ConfigMap/") and k.endswith("-tls-config")]:
        del objects[key]
    for key, obj in objects.items():
        if key.startswith("JobSet/"):
            for rjob in (obj.get("spec") or {}).get("replicatedJobs") or ():
                _normalise_pod(((rjob.get("template") or {}).get("spec") or {}).get("template"))
    return out


def _normalise_pod(pod: Obj | None) -> None:
    if not pod:
        return
    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    annotations.pop(trainerstatus.CA_ANNOTATION, None)
    if "annotations" in (pod.get("metadata") or {}) and not annotations:
        del pod["metadata"]["annotations"]
    spec = pod.get("spec") or {}
    for ctr in (spec.get("containers") or []) + (spec.get("initContainers") or []):
        for env in ctr.get("env") or ():
            if env.get("name") == trainerstatus.ENV_SERVER_URL and "value" in env:
                env["value"] = URL_HOST.sub("https://<status server>", env["value"])
    for vol in spec.get("volumes") or ():
        if vol.get("name") == trainerstatus.TOKEN_VOLUME:
            sources = (vol.get("projected") or {}).get("sources") or []
            vol["projected"]["sources"] = [
                src if "serviceAccountToken" in src else "<status server CA>" for src in sources
            ]


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


def check_flux_curves(plane: Plane, upstream: upstream_harness.Build, prefix: str) -> list[str]:
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
            if not meta["namespace"].startswith(f"diff-{prefix}-") or not meta["name"].endswith(
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


def classify(
    case: corpus.Case, u: compare.Outcome, t: compare.Outcome, status: bool = False
) -> Row:
    """``status``: the run with progress reports on, where :data:`STATUS_SERVER`'s differences
    of every trainer pod template are normalised away first."""
    uo, to = u.as_obj(), t.as_obj()
    if status:
        uo, to = normalise_status_server(uo), normalise_status_server(to)
    lines = compare.diff(uo, to)
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
    """Upstream with its ``TrainJobStatus`` gate off (its default), trainjob with its status
    server off to match."""
    differential(plane, upstream, capsys, status=False)


def test_trainjob_does_what_upstream_does_with_progress_reports_on(
    plane: Plane, upstream: upstream_harness.Build, capsys: pytest.CaptureFixture[str]
) -> None:
    """Upstream with its ``TrainJobStatus`` gate on, trainjob as it ships (status server on):
    the same table, with :data:`STATUS_SERVER` explaining what every trainer pod template
    differs by."""
    differential(plane, upstream, capsys, status=True)


def differential(
    plane: Plane,
    upstream: upstream_harness.Build,
    capsys: pytest.CaptureFixture[str],
    *,
    status: bool,
) -> None:
    cases = corpus.all_cases(upstream.module)
    builtins = corpus.upstream_runtimes(upstream.module)
    api = Api.from_env_json(plane.env_json)
    kube = Client.from_config(str(plane.kubeconfig))
    u_prefix, t_prefix = ("us", "ts") if status else ("u", "t")
    try:
        # Phase 1: upstream.
        upstream_harness.swap_crds(kube, upstream.crds)
        up = upstream_harness.start(upstream, plane.kubeconfig, kube, status=status)
        try:
            wait_for(
                lambda: upstream_harness.webhooks_effective(kube),
                timeout=90,
                what="upstream's webhooks",
            )
            installed_u = install(api, builtins)
            outcomes_u = Phase(api, cases, u_prefix).run()
            assert up.alive(), f"upstream controller exited; log:\n{up.log()[-6000:]}"
        finally:
            up.stop()
        delete_cluster_runtimes(api)

        # Phase 2: trainjob.
        upstream_harness.swap_crds(kube, sorted((REPO / "manifests" / "crds").glob("*.yaml")))
        # gate off: the status server off too (on, trainjob adds upstream's env, projected
        # volume and its CA to each trainer pod template)
        ctl = start_controller(plane, *(() if status else ("--no-status-server",)))
        try:
            wait_for(
                lambda: upstream_harness.webhooks_effective(kube),
                timeout=90,
                what="trainjob's webhooks",
            )
            installed_t = install(api, builtins)
            outcomes_t = Phase(api, cases, t_prefix).run()
            assert ctl.proc.poll() is None, f"trainjob controller exited; log:\n{ctl.log()[-6000:]}"
        finally:
            ctl.stop()
        delete_cluster_runtimes(api)
        # so that the module's next run's controllers find no TrainJobs of this one to reconcile
        for prefix in (u_prefix, t_prefix):
            for i in range(len(cases)):
                api.call(
                    "DELETE",
                    f"{TRAINER_API}/namespaces/{Phase(api, cases, prefix).namespace(i)}/trainjobs",
                )
    finally:
        api.close()
        kube.close()

    curve_errors = check_flux_curves(plane, upstream, u_prefix)
    builtin_diff = compare.diff(
        [a.as_obj() for a in installed_u], [a.as_obj() for a in installed_t]
    )
    rows = [classify(c, outcomes_u[c.name], outcomes_t[c.name], status) for c in cases]
    report = table(rows)
    table_file = os.environ.get("TRAINJOB_DIFF_TABLE")
    if table_file:
        Path(table_file + (".status" if status else "")).write_text(
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
    gate = "on" if status else "off"
    with capsys.disabled():
        print("\n\ndifferential test: upstream trainer-controller-manager "
              f"{upstream_harness.VERSION} (TrainJobStatus {gate}) vs trainjob\n{report}\n")  # fmt: skip
    bad = [r for r in rows if r.verdict in ("DIFFERENT", "STALE")]
    assert curve_errors == [], "Flux CURVE certificates differ from upstream's for the same uid"
    assert builtin_diff == [], f"installing upstream's built-in runtimes differs: {builtin_diff}"
    assert bad == [], "unexplained differences (see the table above)"
    assert len(cases) >= 100
