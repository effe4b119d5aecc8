"""What each apiserver write of a TrainJob costs the control plane, against the floor's JobSet
create: the lower bound of ``benchmarks/controller.py``'s "time to all JobSets / floor".

On a private control plane (``hack/testenv``: etcd and kube-apiserver, no controller manager),
N objects of one kind at a time are written from the same client threads, each kind into a fresh
namespace, and etcd's and kube-apiserver's CPU seconds (/proc) are read around each burst; so is
this process's (the client) and, for the TrainJob creates with webhooks, the controller's (which
serves them; started with ``--namespace`` of another namespace, so it reconciles none of them).
The objects are the ones trainjob's controller writes for a ``torch-distributed`` TrainJob of 2
nodes (compiled by the same compiler, the status server's env and volume included):

* ``JobSet create`` — the floor's write (``benchmarks/controller.py`` creates these directly,
  without the status server's env, volume and CA), and the same with them;
* ``JobSet server-side apply`` — the controller's (field manager ``trainjob``, forced; with the
  status server's env, volume and CA);
* ``TrainJob create`` — without webhooks, and with trainjob's (the apiserver's calls a create
  are printed: 2 before the defaulter's ``matchConditions``, 1 since);
* ``runtime snapshot ConfigMap create`` — the JobSet's sibling; ``tls-config ConfigMap create``
  — upstream's CA ConfigMap per TrainJob with its status server on (trainjob's until its CA rode
  in the JobSet's pod template);
* ``TrainJob status merge patch`` — one status write (``startTime`` and a condition).

Then the sums: what a TrainJob costs the control plane until its JobSet exists, over what the
floor's JobSet create costs. When the control plane's CPU is what paces a burst (2 cores, every
process of the machine sharing them), that ratio is a lower bound of time to all JobSets / floor
whatever the controller does with its own CPU.

    .venv/bin/python benchmarks/apiserver_costs.py [--n 500] [--threads 32] [--rounds 2]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks import controller as bench  # noqa: E402

from trainjob.api.load import parse  # noqa: E402
from trainjob.controller import runtimes  # noqa: E402
from trainjob.kube import Client, certs  # noqa: E402
from trainjob.kube import resources as r  # noqa: E402
from trainjob.runtime import compile  # noqa: E402
from trainjob.runtime.compiler import CompileOptions  # noqa: E402
from trainjob.runtime.plugins.trainjobstatus import StatusServer  # noqa: E402

Obj = dict[str, Any]
RUNTIME = "torch-distributed"
WEBHOOK_CALLS: list[float] = []
"""Webhook calls the apiserver made a TrainJob create, each round."""


@dataclass
class Cost:
    """One kind's burst: CPU seconds of each process and the wall time, for ``n`` objects."""

    label: str
    n: int
    etcd: list[float] = field(default_factory=list)
    apiserver: list[float] = field(default_factory=list)
    client: list[float] = field(default_factory=list)
    controller: list[float] = field(default_factory=list)
    wall: list[float] = field(default_factory=list)

    def ms(self, values: list[float]) -> float:
        """Milliseconds an object (the median over rounds)."""
        return statistics.median(values) / self.n * 1000 if values else 0.0

    @property
    def plane_ms(self) -> float:
        return self.ms([e + a for e, a in zip(self.etcd, self.apiserver, strict=True)])


def cpu(pid: int) -> float:
    return bench.proc_stats(pid)["cpu"]


def write_burst(
    cost: Cost,
    pids: dict[str, int],
    objects: list[Obj],
    write: Callable[[Obj], object],
    threads: int,
    controller_pid: int | None = None,
) -> None:
    """Write ``objects`` from ``threads`` threads at once; add the burst's figures to ``cost``."""
    before = {name: cpu(pid) for name, pid in pids.items()}
    ctl0 = cpu(controller_pid) if controller_pid else 0.0
    me0 = time.process_time()
    t0 = time.monotonic()
    with ThreadPoolExecutor(threads) as pool:
        for f in [pool.submit(write, o) for o in objects]:
            f.result()
    cost.wall.append(time.monotonic() - t0)
    cost.client.append(time.process_time() - me0)
    time.sleep(0.5)  # etcd's fsyncs and the watch cache's fan-out of the last writes
    cost.etcd.append(cpu(pids["etcd"]) - before["etcd"])
    cost.apiserver.append(cpu(pids["kube-apiserver"]) - before["kube-apiserver"])
    if controller_pid:
        cost.controller.append(cpu(controller_pid) - ctl0)


def namespace(kube: Client, name: str) -> str:
    kube.create(r.NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    return name


def plans(
    n: int, ns: str, runtime_doc: Obj, server: StatusServer
) -> list[tuple[Obj, Obj, Obj, Obj]]:
    """(TrainJob, JobSet, snapshot ConfigMap, tls-config ConfigMap, JobSet without the status
    server) of ``n`` TrainJobs, as the controller writes them (the JobSet's owner a made-up uid:
    nothing here collects garbage)."""
    runtime = parse(runtime_doc)
    out = []
    for i in range(n):
        tj = bench.trainjob(f"job-{i:04d}", ns)
        owner = {**tj, "metadata": {**tj["metadata"], "uid": str(uuid.uuid4())}}
        plan = compile(parse(owner), runtime, CompileOptions(status_server=server, resume_env=True))  # type: ignore[arg-type]
        tls = {  # upstream's (and trainjob's before its CA rode in the pod template)
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": f"{tj['metadata']['name']}-tls-config",
                "namespace": ns,
                "ownerReferences": [runtimes.owner_reference(owner)],
            },
            "data": {"ca.crt": server.ca_cert},
        }
        plain = compile(parse(owner), runtime, CompileOptions(resume_env=True)).jobset  # type: ignore[arg-type]
        out.append((tj, plan.jobset, runtimes.snapshot_configmap(owner, runtime_doc), tls, plain))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=500, help="objects of each kind")
    ap.add_argument("--threads", type=int, default=32)
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    print("starting a private control plane (hack/testenv) ...", flush=True)
    state, kc = bench.start_testenv()
    env = json.loads((state / "cp" / "env.json").read_text())
    pids = {name: int(env["pids"][name]) for name in ("etcd", "kube-apiserver")}
    kube = Client.from_config(str(kc), max_connections=args.threads + 8)
    tag = uuid.uuid4().hex[:6]
    try:
        doc = yaml.safe_load((REPO / "manifests/runtimes" / f"{RUNTIME}.yaml").read_text())
        kube.apply(doc, field_manager="trainjob-bench")
        stored = kube.get(r.CLUSTER_TRAINING_RUNTIMES, RUNTIME)
        ca = certs.generate_in_subprocess(["trainjob-controller"], [], "trainjob-status-ca")
        server = StatusServer(
            "https://trainjob-controller.trainjob-system.svc:10443", ca.ca_cert.decode()
        )
        labels = [
            "JobSet create (the floor's write)",
            "JobSet server-side apply (the controller's)",
            "JobSet create, + status server env/volume/CA",
            "TrainJob create, no webhooks",
            "TrainJob create, trainjob's webhooks",
            "runtime snapshot ConfigMap create",
            "tls-config ConfigMap create",
            "TrainJob status merge patch",
        ]
        costs = {label: Cost(label, args.n) for label in labels}
        status_patch = {
            "startTime": "2026-12-01T00:00:00Z",
            "conditions": [
                {
                    "type": "Running",
                    "status": "False",
                    "reason": "Initializing",
                    "message": "the JobSet is being created",
                    "lastTransitionTime": "2026-12-01T00:00:00Z",
                }
            ],
        }
        for rnd in range(args.rounds):
            print(f"round {rnd + 1} ...", flush=True)
            ns = {
                k: namespace(kube, f"cost-{tag}-{rnd}-{k}")
                for k in ("js", "ssa", "full", "tj", "wh", "cm")
            }
            p = plans(args.n, ns["js"], stored, server)
            t = threads = args.threads

            def moved(obj: Obj, to: str) -> Obj:
                return {**obj, "metadata": {**obj["metadata"], "namespace": to}}

            write_burst(
                costs[labels[0]], pids, [x[4] for x in p], lambda o: kube.create(r.JOBSETS, o), t
            )
            write_burst(
                costs[labels[1]], pids, [moved(x[1], ns["ssa"]) for x in p],
                lambda o: kube.apply(o, resource=r.JOBSETS), t,
            )  # fmt: skip
            write_burst(
                costs[labels[2]], pids, [moved(x[1], ns["full"]) for x in p],
                lambda o: kube.create(r.JOBSETS, o), t,
            )  # fmt: skip
            tjs = [moved(x[0], ns["tj"]) for x in p]
            write_burst(costs[labels[3]], pids, tjs, lambda o: kube.create(r.TRAINJOBS, o), t)
            write_burst(
                costs[labels[5]], pids, [moved(x[2], ns["cm"]) for x in p],
                lambda o: kube.create(r.CONFIGMAPS, o), t,
            )  # fmt: skip
            write_burst(
                costs[labels[6]], pids, [moved(x[3], ns["cm"]) for x in p],
                lambda o: kube.create(r.CONFIGMAPS, o), t,
            )  # fmt: skip
            write_burst(
                costs[labels[7]], pids, tjs,
                lambda o: kube.patch_status(
                    r.TRAINJOBS, o["metadata"]["name"], o["metadata"]["namespace"], status_patch
                ),
                t,
            )  # fmt: skip
            # trainjob's webhooks, served by a controller that reconciles another namespace
            opts = argparse.Namespace(
                workers=5, no_webhooks=False, no_status_server=False, profile=None,
                jobs=args.n, watch_namespace=f"cost-{tag}-elsewhere",
            )  # fmt: skip
            with bench.trainjob_controller(kube, str(kc), opts, f"costs-{tag}") as pid:
                bench.burst(kube, [bench.trainjob("warm", ns["wh"])], r.TRAINJOBS, 1)
                hooks = bench.webhook_seconds(kube)
                write_burst(
                    costs[labels[4]], pids, [moved(x[0], ns["wh"]) for x in p],
                    lambda o: kube.create(r.TRAINJOBS, o), threads, controller_pid=pid,
                )  # fmt: skip
                after = bench.webhook_seconds(kube)
                calls = sum(c for _, c in after.values()) - sum(c for _, c in hooks.values())
                WEBHOOK_CALLS.append(calls / args.n)
            bench.purge(kube, *ns.values())
        report(args, costs, labels)
    finally:
        kube.close()
        bench.stop_testenv(state)


def report(args: argparse.Namespace, costs: dict[str, Cost], labels: list[str]) -> None:
    floor = costs[labels[0]].plane_ms
    print()
    print(
        f"apiserver_costs.py: {args.n} objects a kind, {args.threads} client threads, "
        f"median of {args.rounds} rounds; CPU milliseconds an object"
    )
    head = ("write", "etcd", "apiserver", "both", "x floor", "client", "controller", "wall s")
    rows = [head]
    for label in labels:
        c = costs[label]
        rows.append(
            (
                label,
                f"{c.ms(c.etcd):.2f}",
                f"{c.ms(c.apiserver):.2f}",
                f"{c.plane_ms:.2f}",
                f"{c.plane_ms / floor:.2f}",
                f"{c.ms(c.client):.2f}",
                f"{c.ms(c.controller):.2f}" if c.controller else "",
                f"{statistics.median(c.wall):.2f}",
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(head))]
    for row in rows:
        print("  " + "  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)))
    tj = costs[labels[4]].plane_ms
    jobset = costs[labels[1]].plane_ms
    snap, tls, status = (costs[labels[i]].plane_ms for i in (5, 6, 7))
    floor_all = floor + costs[labels[0]].ms(costs[labels[0]].client)
    sums = {
        "TrainJob (its webhooks) + snapshot + JobSet apply": tj + snap + jobset,
        "... + the tls-config ConfigMap (trainjob before)": tj + snap + tls + jobset,
        "... + one status write": tj + snap + tls + jobset + status,
        "bare: TrainJob (its webhooks) + the floor's JobSet": tj + floor,
    }
    print(f"  (the apiserver's webhook calls a TrainJob create, each round: {WEBHOOK_CALLS})")
    print()
    print(
        "  a TrainJob's writes until its JobSet, control plane CPU, over the floor's JobSet "
        f"create ({floor:.2f} ms) and over that with its client's CPU ({floor_all:.2f} ms):"
    )
    for label, total in sums.items():
        print(f"    {label:<52} {total:.2f} ms = {total / floor:.2f}x, {total / floor_all:.2f}x")
    print(
        json.dumps(
            {
                label: {
                    "etcd_ms": round(c.ms(c.etcd), 3),
                    "apiserver_ms": round(c.ms(c.apiserver), 3),
                    "client_ms": round(c.ms(c.client), 3),
                    "controller_ms": round(c.ms(c.controller), 3),
                }
                for label, c in costs.items()
            }
        )
    )


if __name__ == "__main__":
    main()
