"""Copy installed Python distributions, with everything they require, into a virtual environment.

    python copy-dists.py SITE_PACKAGES VENV REQUIREMENT...

For ``TORCH_SOURCE=host`` in docker/Containerfile: torch from PyPI is ~5 GB with its CUDA
libraries, which this machine already has installed; copying them beats downloading them again.
Each distribution that the requirements need (their own requirements, extras and environment
markers followed, as pip would resolve them) is copied file by file as its RECORD lists it, and
its console scripts (``torchrun``) are written anew for ``VENV``'s interpreter. A requirement the
source does not satisfy is an error naming it. Runs with the virtual environment's Python, whose
pip brings the ``packaging`` it uses (or ``packaging`` itself).
"""

from __future__ import annotations

import configparser
import csv
import os
import re
import shutil
import stat
import sys
import sysconfig
from email.parser import Parser
from pathlib import Path

try:
    from packaging.markers import default_environment
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name
except ImportError:  # a bare virtual environment: pip's copy
    from pip._vendor.packaging.markers import default_environment  # type: ignore[no-redef]
    from pip._vendor.packaging.requirements import Requirement  # type: ignore[no-redef]
    from pip._vendor.packaging.utils import canonicalize_name  # type: ignore[no-redef]

SCRIPT = """#!{python}
import re
import sys
from {module} import {attr}
if __name__ == "__main__":
    sys.argv[0] = re.sub(r"(-script\\.pyw|\\.exe)?$", "", sys.argv[0])
    sys.exit({call}())
"""


class Dist:
    """One installed distribution: its dist-info directory in ``site``."""

    def __init__(self, site: Path, info: Path) -> None:
        self.site, self.info = site, info
        self.meta = Parser().parsestr((info / "METADATA").read_text(errors="replace"))
        self.name = canonicalize_name(self.meta["Name"])
        self.version = self.meta["Version"]

    def requires(self, extras: set[str]) -> list[Requirement]:
        env = default_environment()
        out = []
        for line in self.meta.get_all("Requires-Dist") or ():
            req = Requirement(line)
            if req.marker is None or any(
                req.marker.evaluate({**env, "extra": e}) for e in (extras or {""})
            ):
                out.append(req)
        return out

    def files(self) -> list[str]:
        with (self.info / "RECORD").open(newline="") as f:
            return [row[0] for row in csv.reader(f) if row]


def installed(site: Path) -> dict[str, Dist]:
    out = {}
    for info in site.glob("*.dist-info"):
        if (info / "METADATA").exists() and (info / "RECORD").exists():
            d = Dist(site, info)
            out[d.name] = d
    return out


def closure(dists: dict[str, Dist], wanted: list[Requirement]) -> list[Dist]:
    """The distributions ``wanted`` needs; SystemExit naming any requirement not met."""
    todo = [(r, set(r.extras)) for r in wanted]
    done: dict[str, set[str]] = {}
    while todo:
        req, extras = todo.pop()
        name = canonicalize_name(req.name)
        d = dists.get(name)
        if d is None or not req.specifier.contains(d.version, prereleases=True):
            have = f"{d.name} {d.version}" if d else "not installed"
            raise SystemExit(f"copy-dists: {req} is needed, but {have} in {next(iter(dists.values())).site}")
        seen = done.get(name)
        if seen is not None and extras <= seen:
            continue
        done[name] = (seen or set()) | extras
        todo.extend((r, set(r.extras)) for r in d.requires(done[name]))
    return [dists[n] for n in sorted(done)]


def remove(d: Dist) -> None:
    """Uninstall ``d`` (its files, then its dist-info), as pip does before it installs anew."""
    for rel in d.files():
        path = d.site / rel
        if not rel.startswith(("..", "/")) and (path.is_file() or path.is_symlink()):
            path.unlink()
    shutil.rmtree(d.info, ignore_errors=True)


def copy(d: Dist, dest_site: Path) -> int:
    """Copy ``d``'s files under site-packages, replacing a version already there; the bytes."""
    old = installed(dest_site).get(d.name)
    if old is not None:
        remove(old)
    total = 0
    for rel in d.files():
        if rel.startswith(("..", "/")):
            continue  # scripts and data outside site-packages: scripts are written anew
        src, dst = d.site / rel, dest_site / rel
        if not src.exists():
            continue
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, dst)
        total += src.stat().st_size
    (dest_site / d.info.name / "INSTALLER").write_text("copy-dists\n")
    return total


def scripts(d: Dist, venv: Path) -> list[str]:
    ep = d.info / "entry_points.txt"
    if not ep.exists():
        return []
    cfg = configparser.ConfigParser(delimiters="=", interpolation=None)
    cfg.optionxform = str  # type: ignore[assignment,method-assign]
    cfg.read_string(ep.read_text())
    if not cfg.has_section("console_scripts"):
        return []
    out = []
    for name, target in cfg.items("console_scripts"):
        module, _, call = target.strip().partition(":")
        attr = re.split(r"[.\s\[]", call.strip(), maxsplit=1)[0]
        path = venv / "bin" / name
        path.write_text(
            SCRIPT.format(python=venv / "bin" / "python", module=module, attr=attr, call=call)
        )
        path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
        out.append(name)
    return out


def main(argv: list[str]) -> int:
    if len(argv) < 3:
        raise SystemExit(__doc__)
    site, venv = Path(argv[0]), Path(argv[1])
    if not site.is_dir():
        raise SystemExit(
            f"copy-dists: {site} is not a directory: mount an environment's site-packages there "
            "(podman build -v SITE_PACKAGES:/host-site:ro), or build with TORCH_SOURCE=pypi"
        )
    dest = Path(sysconfig.get_paths()["purelib"])
    if not str(dest).startswith(str(venv)):
        raise SystemExit(f"copy-dists: run it with {venv}/bin/python (site-packages is {dest})")
    picked = closure(installed(site), [Requirement(r) for r in argv[2:]])
    total = 0
    for d in picked:
        total += copy(d, dest)
        made = scripts(d, venv)
        print(f"  {d.name} {d.version}" + (f" ({', '.join(made)})" if made else ""))
    print(f"copied {len(picked)} distributions, {total / 1e9:.2f} GB, from {site}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
