#!/usr/bin/env bash
# The test command (README.md, .ci/run): set up, then lint, type-check, check the generated CRDs,
# and run every test: unit, e2e (real local runs) and integration (real kube-apiserver + etcd).
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh

echo "==> ruff"
.venv/bin/ruff check src tests benchmarks
.venv/bin/ruff format --check src tests benchmarks
echo "==> import layers"
.venv/bin/lint-imports --no-cache >/dev/null || .venv/bin/lint-imports --no-cache
echo "==> mypy"
.venv/bin/mypy
if .venv/bin/python -c "import trainjob.api.crd" 2>/dev/null; then
  echo "==> CRDs up to date"
  .venv/bin/python -m trainjob.api.crd --check
fi
echo "==> docs site (mkdocs build --strict: every page in the nav, links and anchors checked)"
site=$(mktemp -d)
.venv/bin/mkdocs build --strict --quiet -d "$site"
rm -rf "$site"
echo "==> CLI reference up to date (docs/cli.md)"
.venv/bin/python -m trainjob.cli.reference --check
echo "==> test control plane (etcd + kube-apiserver from Go modules; cached after the first build)"
bash hack/build-control-plane.sh
echo "==> deployment tools (helm, kustomize from Go modules; cached)"
bash hack/build-tools.sh
echo "==> upstream trainer-controller-manager (the differential test's oracle; cached)"
bash hack/build-upstream-controller.sh
echo "==> pytest"
.venv/bin/pytest -q "$@"
