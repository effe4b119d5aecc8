#!/usr/bin/env python3
"""Draw docs/architecture.svg, the data flow of docs/architecture.md, from the boxes below.

The boxes and arrows in this file are the diagram's source: change them here, run
``python hack/architecture-diagram.py``, commit both. ``--check`` exits 1 when the SVG is stale
(tests/unit/test_architecture_diagram.py runs it). Plain SVG, no dependency.
"""

from __future__ import annotations

import configparser
import sys
import textwrap
from pathlib import Path
from xml.sax.saxutils import escape

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "docs" / "architecture.svg"
W, H = 1100, 920

BLUE, YELLOW, GREEN, RED, GREY, VIOLET = (
    "#e8f0fe",
    "#fef7e0",
    "#e6f4ea",
    "#fce8e6",
    "#f1f3f4",
    "#f3e8fd",
)

# (id, x, y, width, height, title, lines, fill)
BOXES = [
    ("tj", 40, 30, 320, 70, "TrainJob  (api/)", ["YAML (run -f), SDK train(), kubectl"], BLUE),
    (
        "rt",
        740,
        30,
        320,
        70,
        "TrainingRuntime",
        ["ClusterTrainingRuntime (executor/catalog.py)"],
        BLUE,
    ),
    (
        "compile",
        370,
        130,
        360,
        104,
        "compile  (runtime/)",
        [
            "pure, deterministic: runtime/plugins/",
            "upstream's + TrainJobStatus, Resume",
            "validate = the webhook's rules",
        ],
        YELLOW,
    ),
    (
        "plan",
        370,
        270,
        360,
        86,
        "Plan",
        ["JobSet, PodGroup?, ConfigMap?, Secret?", "runtime/kinds.py: how each kind is handled"],
        YELLOW,
    ),
    (
        "trainer",
        40,
        150,
        290,
        124,
        "Inside a pod",
        [
            "trainers/ (trainers/llm/: tune run, trl)",
            "initializers/ (initializers/sources/)",
            "progress.py, trainers/reporting.py:",
            "POST status.trainerStatus",
        ],
        VIOLET,
    ),
    (
        "local",
        40,
        410,
        320,
        142,
        "Local  (local/)",
        [
            "local/client/ > local/job/ > local/state/",
            "a supervisor per job: pods as processes,",
            "SQLite store, log files, probes",
            "status server: local/job/statusserver.py",
        ],
        GREEN,
    ),
    (
        "container",
        390,
        410,
        320,
        142,
        "Container  (local/job/containers/)",
        [
            "the same executor, supervisor, store",
            "each pod as podman or docker",
            "containers of its image",
            "(local/job/runner.py: the pod runner)",
        ],
        GREEN,
    ),
    (
        "k8s",
        740,
        410,
        320,
        142,
        "Kubernetes  (controller/, cluster/)",
        [
            "controller: reconcile, server-side apply,",
            "webhooks: controller/webhooks/,",
            "status server: controller/statusserver.py;",
            "JobSet runs the pods;",
            "KubernetesExecutor: reads over the API",
        ],
        GREEN,
    ),
    (
        "model",
        240,
        610,
        620,
        68,
        "Executor interface + job model  (executor/)",
        ["JobState, PodState, Event, MetricSample (status.trainerStatus)", "watch, wait, logs"],
        RED,
    ),
    (
        "sweeps",
        740,
        732,
        320,
        86,
        "Sweeps  (optimizer/)",
        [
            "OptimizationJob: engine pure, driver over",
            "any Executor (local sweep supervisor,",
            "the controller's reconciler)",
        ],
        YELLOW,
    ),
    ("sdk", 40, 732, 200, 44, "SDK  (client/)", [], GREY),
    ("cli", 270, 732, 200, 44, "CLI  (cli/)", [], GREY),
    ("dash", 500, 732, 210, 44, "Dashboard  (dashboard/)", [], GREY),
]

# (from, to, label, from side, to side, dashed): sides are b(ottom), t(op), l(eft), r(ight),
# with an optional ":fraction" along the side (0.5, the middle, by default)
ARROWS = [
    ("tj", "compile", "", "b", "t:0.25", False),
    ("rt", "compile", "", "b", "t:0.75", False),
    ("compile", "plan", "", "b", "t", False),
    ("plan", "local", "run here", "b:0.2", "t:0.75", False),
    ("plan", "container", "", "b", "t", False),
    ("plan", "k8s", "apply", "b:0.8", "t:0.25", False),
    ("trainer", "local", "report to its status server", "b:0.3", "t:0.3", True),
    ("local", "model", "status", "b", "t:0.2", False),
    ("container", "model", "", "b", "t", False),
    ("k8s", "model", "status", "b", "t:0.8", False),
    ("model", "sdk", "", "b:0.1", "t", False),
    ("model", "cli", "", "b:0.3", "t", False),
    ("model", "dash", "", "b:0.55", "t", False),
    ("sweeps", "model", "trials", "t:0.2", "b:0.85", False),
]


def _layers_of(contract: str) -> str:
    """A layers contract of .importlinter as the page writes it: ``cli > client | dashboard > ...``."""
    config = configparser.ConfigParser()
    config.read(ROOT / ".importlinter")
    layers = config[f"importlinter:contract:{contract}"]["layers"].split("\n")
    return " > ".join(
        " | ".join(p.strip().removeprefix("trainjob.") for p in layer.split("|"))
        for layer in layers
        if layer.strip()
    )


# the layers are read from .importlinter, so the picture goes stale (and its test fails) when they
# change
LAYERS = textwrap.wrap(
    f"Layers (.importlinter): {_layers_of('layers')};  local/: {_layers_of('local-rooms')};  "
    "what runs inside a pod (trainers/, initializers/) imports no backend, controller, client, "
    "CLI or compiler",
    width=92,
)


def _box(b: tuple[str, int, int, int, int, str, list[str], str]) -> str:
    _, x, y, w, h, title, lines, fill = b
    parts = [
        f'<rect x="{x}" y="{y}" width="{w}" height="{h}" rx="8" fill="{fill}" stroke="#5f6368"/>',
        f'<text x="{x + w / 2:.0f}" y="{y + 24}" text-anchor="middle" font-weight="bold">'
        f"{escape(title)}</text>",
    ]
    for i, line in enumerate(lines):
        parts.append(
            f'<text x="{x + w / 2:.0f}" y="{y + 44 + 18 * i}" text-anchor="middle" '
            f'font-size="13">{escape(line)}</text>'
        )
    return "\n".join(parts)


def _anchor(
    b: tuple[str, int, int, int, int, str, list[str], str], side: str
) -> tuple[float, float]:
    _, x, y, w, h = b[:5]
    where, _, frac = side.partition(":")
    f = float(frac) if frac else 0.5
    return {
        "b": (x + w * f, y + h),
        "t": (x + w * f, y),
        "l": (x, y + h * f),
        "r": (x + w, y + h * f),
    }[where]


def _arrow(a: tuple[str, str, str, str, str, bool]) -> str:
    by_id = {b[0]: b for b in BOXES}
    src, dst, label, src_side, dst_side, dashed = a
    x1, y1 = _anchor(by_id[src], src_side)
    x2, y2 = _anchor(by_id[dst], dst_side)
    y2 += -2 if y2 > y1 else 2
    dash = ' stroke-dasharray="6 4"' if dashed else ""
    out = (
        f'<line x1="{x1:.0f}" y1="{y1:.0f}" x2="{x2:.0f}" y2="{y2:.0f}" stroke="#3c4043" '
        f'stroke-width="1.6"{dash} marker-end="url(#arrow)"/>'
    )
    if label:
        out += (
            f'\n<text x="{(x1 + x2) / 2 + 8:.0f}" y="{(y1 + y2) / 2:.0f}" font-size="13" '
            f'font-style="italic">{escape(label)}</text>'
        )
    return out


def _layers() -> str:
    y0 = 850
    return "\n".join(
        f'<text x="40" y="{y0 + 18 * i}" font-size="13" fill="#3c4043">{escape(line)}</text>'
        for i, line in enumerate(LAYERS)
    )


def render() -> str:
    body = "\n".join([*(_box(b) for b in BOXES), *(_arrow(a) for a in ARROWS), _layers()])
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
        f'viewBox="0 0 {W} {H}" font-family="Helvetica, Arial, sans-serif" font-size="15">\n'
        '<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" '
        'markerWidth="8" markerHeight="8" orient="auto-start-reverse">'
        '<path d="M 0 0 L 10 5 L 0 10 z" fill="#3c4043"/></marker></defs>\n'
        f'<rect width="{W}" height="{H}" fill="white"/>\n'
        f"{body}\n</svg>\n"
    )


def main(argv: list[str]) -> int:
    svg = render()
    if "--check" in argv:
        if not OUT.is_file() or OUT.read_text() != svg:
            print(f"{OUT} is stale: run python hack/architecture-diagram.py", file=sys.stderr)
            return 1
        return 0
    OUT.write_text(svg)
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
