#!/usr/bin/env bash
# Set up a fresh machine for trainjob: a virtual environment in .venv with trainjob and its
# dependencies (torch pinned, for real distributed runs), plus the system packages the local
# backend needs (OpenMPI). Idempotent: a second run only checks.
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf '==> %s\n' "$*"; }

# System packages first: mpi4py builds against OpenMPI's headers.
bash scripts/setup-local.sh
# Debian's chromium for the dashboard's browser tests (Playwright drives it; no browser download).
bash scripts/setup-browser.sh

if ! command -v uv >/dev/null 2>&1; then
  say "installing uv"
  python3 -m pip install --quiet --disable-pip-version-check uv
fi

if [ ! -x .venv/bin/python ]; then
  say "creating .venv"
  uv venv --quiet --python python3 .venv
fi

say "installing trainjob and its dependencies into .venv"
# Bytecode compiled now, as pip does: otherwise every torch process (each node, each rank)
# compiles torch from source when PYTHONDONTWRITEBYTECODE is set or site-packages is read-only.
uv pip install --quiet --compile-bytecode -p .venv -e ".[dev,docs,torch,initializers,llm,dashboard]"
# A .venv made before that flag: uv only compiles what it installs.
site=$(.venv/bin/python -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
if [ ! -d "$site/torch/__pycache__" ]; then
  say "compiling .venv's Python files to bytecode (once)"
  .venv/bin/python -m compileall -q -j 0 "$site" >/dev/null 2>&1 || true
fi

say "ready: $(.venv/bin/trainjob version 2>/dev/null || echo trainjob)"
