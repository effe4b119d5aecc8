#!/usr/bin/env bash
# Set up a fresh machine for trainjob: a virtual environment in .venv with trainjob and its
# dependencies (torch pinned, for real distributed runs), plus the system packages the local
# backend needs (OpenMPI). Idempotent: a second run only checks.
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf '==> %s\n' "$*"; }

# System packages first: mpi4py builds against OpenMPI's headers.
bash scripts/setup-local.sh

if ! command -v uv >/dev/null 2>&1; then
  say "installing uv"
  python3 -m pip install --quiet --disable-pip-version-check uv
fi

if [ ! -x .venv/bin/python ]; then
  say "creating .venv"
  uv venv --quiet --python python3 .venv
fi

say "installing trainjob and its dependencies into .venv"
uv pip install --quiet -p .venv -e ".[dev,torch]"

say "ready: $(.venv/bin/trainjob version 2>/dev/null || echo trainjob)"
