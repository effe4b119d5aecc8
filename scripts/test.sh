#!/usr/bin/env bash
# The test command (README.md, .ci/run): set up, then lint, type-check, check the generated CRDs,
# and run every test: unit, e2e (real local runs), integration (real kube-apiserver + etcd) and
# cluster (the whole test cluster of `hack/testenv up --cluster`).
#
# The Go builds (the test cluster's binaries, helm and kustomize, upstream's controller; cached by
# version, so a no-op once built, and most of a cold run's time) start first, in the background,
# one after the other in the order the test tiers need them (integration: the control plane, helm
# and kustomize, upstream's controller; cluster: the rest), while the Python set-up, lint, types
# and the fast tests run.
# The test fixtures wait for the builds they need (hack/build-control-plane.sh takes a lock per
# component). Their log: $TRAINJOB_GO_BUILD_LOG (default: a temporary file, printed at the end).
set -euo pipefail
cd "$(dirname "$0")/.."

GO_BUILD_LOG="${TRAINJOB_GO_BUILD_LOG:-$(mktemp "${TMPDIR:-/tmp}/trainjob-go-builds.XXXXXX")}"
go_builds() {
  local t0; t0=$(date +%s)
  bash hack/build-control-plane.sh control-plane
  bash hack/build-tools.sh
  bash hack/build-upstream-controller.sh
  bash hack/build-control-plane.sh cluster
  echo "go builds: all done in $(( $(date +%s) - t0 ))s"
}
BUILDS_PID=""
if command -v go >/dev/null; then
  echo "==> Go builds in the background (log: $GO_BUILD_LOG)"
  # its own session, so that it and its compilers can be stopped together
  setsid bash -c "$(declare -f go_builds); go_builds" >"$GO_BUILD_LOG" 2>&1 &
  BUILDS_PID=$!
fi
stop_builds() {
  if [[ -n "$BUILDS_PID" ]] && kill -0 "$BUILDS_PID" 2>/dev/null; then
    kill -TERM -- "-$BUILDS_PID" 2>/dev/null || true
  fi
}
trap stop_builds EXIT

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
echo "==> pytest (unit, e2e, integration, cluster; the Go builds go on meanwhile)"
status=0
.venv/bin/pytest -q "$@" || status=$?
if [[ -n "$BUILDS_PID" ]]; then
  builds=0
  wait "$BUILDS_PID" || builds=$?
  BUILDS_PID=""
  echo "==> Go builds (exit $builds):"
  grep -E "done in|of CPU|present|FAILED|all done" "$GO_BUILD_LOG" || true
  if [[ $builds -ne 0 ]]; then tail -40 "$GO_BUILD_LOG"; [[ $status -ne 0 ]] || status=$builds; fi
fi
exit "$status"
