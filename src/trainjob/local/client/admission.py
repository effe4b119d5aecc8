"""What a local submit checks before anything starts, and the first rows it stores.

The TrainJob is named (``generateName``) and given a uid, admitted by the same rules as
``trainjob plan`` and the webhooks (:func:`trainjob.executor.catalog.admit`), compiled by the one compiler,
reduced to what this machine runs (each kind as its plugin declares, :mod:`trainjob.runtime.kinds`)
and checked against this machine's limits and commands. Used by
:meth:`trainjob.local.client.executor.LocalExecutor.submit` and ``check``.
"""

from __future__ import annotations

import copy
import os
import secrets
from collections.abc import Sequence
from pathlib import Path

from trainjob.api import constants as c
from trainjob.api.base import to_dict
from trainjob.api.trainer import Runtime, TrainJob
from trainjob.errors import ConfigError, FieldError, InvalidError
from trainjob.executor import catalog
from trainjob.local.client import limits, workspaces
from trainjob.local.client import runtimes as local_runtimes
from trainjob.local.job import jobset_rules, mpi, pods
from trainjob.local.job import runner as runners
from trainjob.local.state.home import DEFAULT_NAMESPACE
from trainjob.local.state.store import PodRow, Store
from trainjob.runtime import CompileOptions, compile, kinds, registry
from trainjob.runtime.plan import Plan

_NAME_CHARS = "bcdfghjklmnpqrstvwxz2456789"

Prepared = tuple[TrainJob, dict[str, object], Plan, str, list[PodRow]]
"""The TrainJob to store, its runtime as a dict, its Plan, its working directory, its pod rows."""


def prepare(
    home: Path,
    store: Store,
    runner: str,
    trainjob: TrainJob,
    runtimes: Sequence[Runtime],
    cwd: str | None,
) -> Prepared:
    """The TrainJob to store (named, with a uid), its runtime as a dict, its Plan, its working
    directory and its first pod rows, once it passes every check (:func:`catalog.admit`:
    the same rules as ``trainjob plan`` and the webhooks; this machine's limits; commands)."""
    tj = trainjob.model_copy(deep=True)
    meta = tj.metadata
    meta.namespace = meta.namespace or DEFAULT_NAMESPACE
    if not meta.name:
        if not meta.generate_name:
            raise InvalidError(
                [FieldError.required("metadata.name", "name or generateName is required")],
                f"{c.TRAINJOB_KIND}.{c.GROUP}",
            )
        meta.name = meta.generate_name + "".join(secrets.choice(_NAME_CHARS) for _ in range(5))
    # Also checks the namespace, which names a directory under $TRAINJOB_HOME ("../.." never
    # passes).
    runtime = catalog.admit(tj, [*runtimes, *local_runtimes.stored(store)])
    options = CompileOptions()
    policy = runtime.spec.ml_policy
    if policy is not None and policy.mpi is not None:
        from trainjob.executor import sshkeys

        private, public = sshkeys.generate_ssh_key_pair()
        options = CompileOptions(ssh_private_key=private, ssh_public_key=public)
    plan = local_plan(compile(tj, runtime, options, validated=True))  # admit validated it
    plan = workspaces.adapt(plan, home, {"metadata": {"annotations": meta.annotations or {}}})
    limits.check(plan, tj)
    run_dir = os.path.abspath(cwd or os.getcwd())
    runtime_dict = to_dict(runtime)
    meta.uid = new_uid()
    first_pods = preflight(
        home, runner, plan, runtime_dict, meta.namespace, meta.name, meta.uid, run_dir
    )
    return tj, runtime_dict, plan, run_dir, first_pods


def preflight(
    home: Path,
    runner: str,
    plan: Plan,
    runtime: dict[str, object],
    ns: str,
    name: str,
    uid: str,
    cwd: str,
) -> list[PodRow]:
    """Check that every pod that will run can run here (its command exists; on the
    container backend, its image can be had); its Pending rows."""
    problems = runners.runner_for(runner, (ns, name, uid)).check(plan, runtime, home, ns, cwd)
    if problems:
        raise ConfigError("; ".join(problems))
    plan = Plan(tuple(copy.deepcopy(list(plan.objects))))
    local_mpi = mpi.adapt(plan, runtime) if not runner else None
    rows, _virtual = jobset_rules.pending_rows(
        pods.pod_templates(plan, uid), ns, name, uid, 0, local_mpi
    )
    return list(rows.values())


def new_uid() -> str:
    import uuid

    return str(uuid.uuid4())


def local_plan(plan: Plan) -> Plan:
    """The Plan as this machine runs it, each object as its plugin declares
    (:mod:`trainjob.runtime.kinds`): the JobSet runs as processes, ConfigMaps and Secrets are
    mounted as files, PodGroups are left out (one machine needs no gang scheduling). A kind no
    plugin declares is a ConfigError before anything starts."""
    kept = []
    for obj in plan.objects:
        try:
            kind = registry.kind_of(obj)
        except KeyError:
            raise ConfigError(
                f"the plan holds a {obj.get('apiVersion')}, Kind={obj.get('kind')} that no runtime "
                "plugin declares: the local backend cannot run it (use a cluster)"
            ) from None
        if kind.local is not kinds.Local.SKIP:
            kept.append(obj)
    return Plan(tuple(kept))
