"""Print trainjob's table of torchtune 0.6.1's per-config training defaults (src/trainjob/trainers/llm/defaults.py).

Usage: python hack/torchtune-defaults.py DIR, where DIR holds torchtune's ``recipes/configs``
(``uv pip install --no-deps --target DIR torchtune==0.6.1``). tests/unit/trainers/test_defaults.py
checks the table against the same files, so a hand edit that drifts from torchtune fails there.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from trainjob.trainers.llm import defaults

if __name__ == "__main__":
    table = defaults.read_torchtune_configs(Path(sys.argv[1]) / "recipes" / "configs")
    print("TORCHTUNE: dict[str, Defaults] = {")
    for name, d in sorted(table.items()):
        print(f"    {name!r}: {d!r},")
    print("}")
