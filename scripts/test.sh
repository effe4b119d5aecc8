#!/usr/bin/env bash
# The test command (README.md, .ci/run): set up, then lint, type-check, check the generated CRDs,
# and run every test: unit, e2e (real local runs) and integration (real kube-apiserver + etcd).
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh
bash scripts/setup-containers.sh

# trainjob's images (podman; cached by content, so a warm run takes seconds) build in the
# background while the checks and the Go builds below run: they share no work.
export CONTAINERS_CONF="${CONTAINERS_CONF:-$PWD/hack/containers.conf}"
mkdir -p "${TRAINJOB_CACHE:-$HOME/.cache/trainjob}"
images_log="${TRAINJOB_CACHE:-$HOME/.cache/trainjob}/build-images.log"
stop_images() { [ -z "${images_pid:-}" ] || kill -- "-$images_pid" 2>/dev/null || true; }
trap stop_images EXIT
if problem=$(bash hack/build-images.sh --check 2>&1); then
  echo "==> images (hack/build-images.sh, in the background; log: $images_log)"
  setsid bash hack/build-images.sh >"$images_log" 2>&1 &
  images_pid=$!
else
  images_pid=""
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
echo "==> test control plane (etcd + kube-apiserver from Go modules; cached after the first build)"
bash hack/build-control-plane.sh
echo "==> deployment tools (helm, kustomize from Go modules; cached)"
bash hack/build-tools.sh
echo "==> upstream trainer-controller-manager (the differential test's oracle; cached)"
bash hack/build-upstream-controller.sh
if [ -n "$images_pid" ]; then
  echo "==> images: waiting for hack/build-images.sh"
  rc=0
  wait "$images_pid" || rc=$?
  images_pid=""
  if [ "$rc" -eq 3 ]; then
    echo "==> images: NOT BUILT: $(tail -n 1 "$images_log")"
    echo "    (the image and container-backend tests will be skipped, saying so)"
  elif [ "$rc" -ne 0 ]; then
    tail -n 60 "$images_log"
    echo "hack/build-images.sh failed (log: $images_log)" >&2
    exit 1
  else
    sed -n '/^IMAGE /,$p' "$images_log"
  fi
fi
echo "==> pytest"
.venv/bin/pytest -q "$@"
