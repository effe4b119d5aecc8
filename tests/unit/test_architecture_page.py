"""docs/architecture.md names every package of trainjob, and every path it names exists.

The rule for naming a package: its path under ``src/trainjob/`` with a trailing slash, in
backticks (`` `local/client/` ``, `` `runtime/plugins/` ``); a named file inside it does not
count (`` `local/client/executor.py` `` names the module, not the package). The page states
where each package sits, so a new package (a directory with ``__init__.py``) fails this test
until the page says what it is for.

A path the page names is any backticked token with a ``/`` or a ``.py`` in it (no spaces, no
URL, no placeholder such as ``$TRAINJOB_HOME/cache``): it must exist under ``src/trainjob/``
or the repository root, so a module moved or renamed does not leave the page pointing at
nothing. A dotted name ``trainjob.x.y`` must be a module, or a module and a name it defines.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src" / "trainjob"
PAGE = ROOT / "docs" / "architecture.md"
CODE = re.compile(r"`([^`\n]+)`")


def packages() -> list[str]:
    """Every package below ``trainjob`` itself, as ``a/b/``."""
    return sorted(
        init.parent.relative_to(SRC).as_posix() + "/"
        for init in SRC.rglob("__init__.py")
        if init.parent != SRC
    )


def named() -> set[str]:
    return set(CODE.findall(PAGE.read_text()))


def named_paths() -> list[str]:
    paths = []
    for token in sorted(named()):
        if " " in token or "://" in token or token.startswith(("/", "$", "-")):
            continue
        if any(ch in token for ch in "<>{}*|="):
            continue
        if "/" in token or token.endswith(".py"):
            paths.append(token)
    return paths


def test_the_page_names_every_package() -> None:
    found = packages()
    assert "local/client/" in found and "trainers/llm/" in found  # the rule's own examples
    missing = [pkg for pkg in found if pkg not in named()]
    assert missing == [], f"docs/architecture.md does not name the packages {missing}"


def test_every_path_the_page_names_exists() -> None:
    paths = named_paths()
    assert "runtime/kinds.py" in paths and "manifests/runtimes/" in paths
    missing = [p for p in paths if not ((SRC / p).exists() or (ROOT / p).exists())]
    assert missing == [], f"docs/architecture.md names paths that do not exist: {missing}"


def test_every_dotted_trainjob_name_the_page_names_exists() -> None:
    dotted = [t for t in named() if re.fullmatch(r"trainjob(\.\w+)+", t)]
    assert "trainjob.progress.update_trainjob_status" in dotted
    missing = []
    for name in dotted:
        parts = name.split(".")[1:]
        # the longest prefix that is a module; what follows it must be a name it defines
        for cut in range(len(parts), 0, -1):
            base = SRC.joinpath(*parts[:cut])
            module = base / "__init__.py" if base.is_dir() else base.with_suffix(".py")
            if module.is_file():
                rest = parts[cut:]
                if rest and not re.search(
                    rf"^\s*(def|class)?\s*{rest[0]}\b", module.read_text(), re.M
                ):
                    missing.append(name)
                break
        else:
            missing.append(name)
    assert missing == [], f"docs/architecture.md names what trainjob does not have: {missing}"


def test_the_page_quotes_the_layers_contract() -> None:
    import configparser

    config = configparser.ConfigParser()
    config.read(ROOT / ".importlinter")
    layers = config["importlinter:contract:layers"]["layers"].split("\n")
    line = " > ".join(
        " | ".join(part.strip().removeprefix("trainjob.") for part in layer.split("|"))
        for layer in layers
        if layer.strip()
    )
    assert line.startswith("cli > ") and line.endswith(" > core")
    assert f"```\n{line}\n```" in PAGE.read_text(), f"docs/architecture.md's layers are not {line}"
