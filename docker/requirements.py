"""Print trainjob's requirements from pyproject.toml, one a line, for ``pip install -r``.

    python requirements.py                 the core dependencies
    python requirements.py --only llm ...  only the dependencies of the extras named
    python requirements.py --without optuna ...
                                           the core dependencies but the ones named (the
                                           initializer image: optuna and its numpy and
                                           SQLAlchemy serve only sweeps, which it never runs)

The images (docker/Containerfile) install these in a layer of their own before trainjob's source,
so that a change under src/ rebuilds only the small layer that installs trainjob itself.
Standard library only (it runs on the bare base image).
"""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path


def requirements(pyproject: Path, extras: list[str]) -> list[str]:
    project = tomllib.loads(pyproject.read_text())["project"]
    if not extras:
        return list(project.get("dependencies") or ())
    optional = project.get("optional-dependencies") or {}
    unknown = [e for e in extras if e not in optional]
    if unknown:
        raise SystemExit(f"unknown extras {unknown}; pyproject.toml has {sorted(optional)}")
    return [req for e in extras for req in optional[e]]


def name(req: str) -> str:
    """A requirement's distribution name, normalized (PEP 503): ``optuna>=5.0,<6`` -> ``optuna``."""
    return re.sub(r"[-_.]+", "-", re.split(r"[\s<>=!~;\[(]", req.strip(), maxsplit=1)[0]).lower()


def main(argv: list[str]) -> int:
    extras = argv[1:] if argv[:1] == ["--only"] else []
    without = {name(n) for n in argv[1:]} if argv[:1] == ["--without"] else set()
    if argv and not (extras or without):
        raise SystemExit(__doc__)
    here = Path(__file__).resolve().parent
    pyproject = next(p for p in (here / "pyproject.toml", here.parent / "pyproject.toml") if p.exists())
    reqs = requirements(pyproject, extras)
    unknown = without - {name(r) for r in reqs}
    if unknown:
        raise SystemExit(f"--without {sorted(unknown)}: not a core dependency of pyproject.toml")
    for req in reqs:
        if name(req) not in without:
            print(req)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
