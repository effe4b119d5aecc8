#!/usr/bin/env python3
"""Draw docs/architecture.svg, the data flow of docs/architecture.md, from the boxes below.

The boxes and arrows in this file are the diagram's source: change them here, run
``python hack/architecture-diagram.py``, commit both. ``--check`` exits 1 when the SVG is stale
(tests/unit/test_architecture_diagram.py runs it). Plain SVG, no dependency.
"""

from __future__ import annotations

import sys
from pathlib import Path
from xml.sax.saxutils import escape

OUT = Path(__file__).resolve().parent.parent / "docs" / "architecture.svg"
W, H = 980, 640

# (id, x, y, width, height, title, lines, fill)
BOXES = [
    ("tj", 40, 30, 260, 70, "TrainJob", ["YAML (run -f), SDK train(), kubectl"], "#e8f0fe"),
    ("rt", 680, 30, 260, 70, "TrainingRuntime", ["ClusterTrainingRuntime (catalog)"], "#e8f0fe"),
    (
        "compile",
        330,
        130,
        320,
        86,
        "compile  (runtime/)",
        ["pure, deterministic: upstream's plugins", "validate = the webhook's rules"],
        "#fef7e0",
    ),
    (
        "plan",
        330,
        250,
        320,
        86,
        "Plan",
        ["JobSet, PodGroup?, ConfigMap?, Secret?", "runtime/kinds.py: how each kind is handled"],
        "#fef7e0",
    ),
    (
        "local",
        40,
        380,
        380,
        96,
        "LocalExecutor  (local/)",
        ["a supervisor per job: pods as processes,", "SQLite store, log files, probes"],
        "#e6f4ea",
    ),
    (
        "k8s",
        560,
        380,
        380,
        96,
        "Kubernetes  (controller/, cluster/)",
        ["controller: server-side apply, JobSet runs", "KubernetesExecutor: reads over the API"],
        "#e6f4ea",
    ),
    (
        "model",
        250,
        510,
        480,
        50,
        "Executor interface + job model  (executor/)",
        ["JobState, PodState, Event; watch, wait, logs"],
        "#fce8e6",
    ),
    ("sdk", 250, 585, 220, 40, "SDK  (client/)", [], "#f1f3f4"),
    ("cli", 510, 585, 220, 40, "CLI  (cli/)", [], "#f1f3f4"),
]

# (from, to, label)
ARROWS = [
    ("tj", "compile", ""),
    ("rt", "compile", ""),
    ("compile", "plan", ""),
    ("plan", "local", "run here"),
    ("plan", "k8s", "apply"),
    ("local", "model", "status"),
    ("k8s", "model", "status"),
    ("model", "sdk", ""),
    ("model", "cli", ""),
]


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


def _arrow(a: tuple[str, str, str]) -> str:
    by_id = {b[0]: b for b in BOXES}
    src, dst, label = by_id[a[0]], by_id[a[1]], a[2]
    x1, y1 = src[1] + src[3] / 2, src[2] + src[4]
    x2, y2 = dst[1] + dst[3] / 2, dst[2]
    out = (
        f'<line x1="{x1:.0f}" y1="{y1:.0f}" x2="{x2:.0f}" y2="{y2 - 2:.0f}" stroke="#3c4043" '
        'stroke-width="1.6" marker-end="url(#arrow)"/>'
    )
    if label:
        out += (
            f'\n<text x="{(x1 + x2) / 2 + 8:.0f}" y="{(y1 + y2) / 2:.0f}" font-size="13" '
            f'font-style="italic">{escape(label)}</text>'
        )
    return out


def render() -> str:
    body = "\n".join([*(_box(b) for b in BOXES), *(_arrow(a) for a in ARROWS)])
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
        f'viewBox="0 0 {W} {H}" font-family="Helvetica, Arial, sans-serif" font-size="15">\n'
        "<defs><marker id=\"arrow\" viewBox=\"0 0 10 10\" refX=\"9\" refY=\"5\" "
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
