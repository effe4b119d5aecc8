#!/usr/bin/env bash
# The test command (README.md, .ci/run): set up, then lint, type-check, check the generated CRDs,
# and run every test: unit, e2e (real local runs), integration (real kube-apiserver + etcd) and
# cluster (the whole test cluster of `hack/testenv up --cluster`).
#
# The Go builds (the test cluster's binaries, helm and kustomize, upstream's controller; cached by
# version, so a no-op once built, and most of a cold run's time) start first, in the background,
# one after the other in the order the test tiers need them (integration: the control plane, helm
# and kustomize, upstream's controller; cluster: the rest), while the Python set-up, lint, types
# and the fast tests run. Cold (no ~/.cache/trainjob: no Go modules, no build cache) they are
# ~3,400 CPU seconds and ~600 MB of modules: about 33 minutes on 2 idle cores, and the whole run
# about 55-66 of CI's 90 minutes (measured and estimated in hack/README.md, "Cold build cost").
# The test fixtures wait for the builds they need (hack/build-control-plane.sh takes a lock per
# component). Their log: $TRAINJOB_GO_BUILD_LOG (default: a temporary file, printed at the end).
#
# trainjob's images (hack/build-images.sh: podman, cached by content, so seconds once built) build
# in the background too, once scripts/setup.sh has made .venv (the trainers copy its torch); the
# tests that run an image wait for it (tests/containers.py: the script's lock). Where podman cannot
# run containers, nothing is built and those tests are skipped, saying why. Cold, they take ~400
# CPU seconds and ~18 minutes (mostly disk and network; hack/cold-images.sh measures it).
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
IMAGES_PID=""
stop_builds() {
  local pid
  for pid in "$BUILDS_PID" "$IMAGES_PID"; do
    if [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null; then
      kill -TERM -- "-$pid" 2>/dev/null || true
    fi
  done
}
trap stop_builds EXIT

bash scripts/setup.sh
bash scripts/setup-containers.sh

export CONTAINERS_CONF="${CONTAINERS_CONF:-$PWD/hack/containers.conf}"
IMAGES_LOG="${TRAINJOB_IMAGES_LOG:-$(mktemp "${TMPDIR:-/tmp}/trainjob-images.XXXXXX")}"
if problem=$(bash hack/build-images.sh --check 2>&1); then
  echo "==> images in the background (hack/build-images.sh; log: $IMAGES_LOG)"
  setsid bash hack/build-images.sh >"$IMAGES_LOG" 2>&1 &
  IMAGES_PID=$!
else
  echo "==> images: NOT BUILT, podman cannot run containers here: $problem"
  echo "    (the image and container-backend tests will be skipped, saying so)"
fi

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
echo "==> pytest (unit, e2e, integration, cluster; the Go builds and the images go on meanwhile)"
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
if [[ -n "$IMAGES_PID" ]]; then
  images=0
  wait "$IMAGES_PID" || images=$?
  IMAGES_PID=""
  if [[ $images -eq 3 ]]; then
    echo "==> images: NOT BUILT: $(tail -n 1 "$IMAGES_LOG") (their tests were skipped, saying so)"
  elif [[ $images -ne 0 ]]; then
    tail -40 "$IMAGES_LOG"
    echo "==> images: hack/build-images.sh failed (exit $images; log: $IMAGES_LOG)"
    [[ $status -ne 0 ]] || status=$images
  else
    echo "==> images (hack/build-images.sh):"
    grep -E "^==> .*(built in|cached)" "$IMAGES_LOG" || true
    sed -n '/^IMAGE /,$p' "$IMAGES_LOG"
  fi
fi
exit "$status"
