#!/usr/bin/env bash
# Build upstream Kubeflow Trainer's controller (trainer-controller-manager) from the Go module
# proxy and cache it by version outside the repo: the oracle of the differential test
# (tests/integration/test_upstream_diff.py) and the reference of `benchmarks/controller.py --upstream`.
#
#   hack/build-upstream-controller.sh                 build (skipped when the binary is there)
#   hack/build-upstream-controller.sh --print-dir     print the cache dir (binary + module files) and exit
#
# Layout: $TRAINJOB_CACHE/upstream/trainer-$TRAINER_VERSION/   (TRAINJOB_CACHE default ~/.cache/trainjob)
#   trainer-controller-manager     the binary (`go install github.com/kubeflow/trainer/v2/cmd/...`:
#                                  upstream's go.mod has no replace directive, so no wrapper module)
#   module -> the module's source dir in GOMODCACHE (webhook manifests, runtimes, examples: what
#            the differential test reads; read-only)
#   crds/                          upstream's CRDs (manifests/base/crds) and the scheduler-plugins
#                                  PodGroup CRD at the version upstream's go.mod requires
# GOMODCACHE/GOCACHE are the control plane's ($TRAINJOB_CACHE/control-plane/go/{mod,build}), so
# modules shared with the JobSet/Kubernetes builds are downloaded once. One build at a time per
# cache dir (its own lock, <cache>/upstream/.build.lock).
#
# Env overrides: TRAINER_VERSION (v2.3.0), TRAINJOB_CACHE, GOPROXY, GOTOOLCHAIN (default: local),
# BUILD_JOBS (go -p).
set -euo pipefail

TRAINER_VERSION="${TRAINER_VERSION:-v2.3.0}"
CACHE_ROOT="${TRAINJOB_CACHE:-$HOME/.cache/trainjob}"
UP="$CACHE_ROOT/upstream"
OUT="$UP/trainer-$TRAINER_VERSION"
PKG="github.com/kubeflow/trainer/v2/cmd/trainer-controller-manager"
MOD="github.com/kubeflow/trainer/v2"

if [[ "${1:-}" == "--print-dir" ]]; then
  echo "$OUT"
  exit 0
fi
if [[ "${1:-}" == "-h" || "${1:-}" == "--help" ]]; then
  sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'
  exit 0
fi
[[ $# -eq 0 ]] || { echo "build-upstream-controller: unexpected argument: $1 (see --help)" >&2; exit 2; }

command -v go >/dev/null || { echo "build-upstream-controller: 'go' is not on PATH" >&2; exit 1; }

export GOMODCACHE="$CACHE_ROOT/control-plane/go/mod"
export GOCACHE="$CACHE_ROOT/control-plane/go/build"
export GOFLAGS="-mod=mod -modcacherw -buildvcs=false"
export CGO_ENABLED=0
export GOTOOLCHAIN="${GOTOOLCHAIN:-local}"
export GOWORK=off
export GO111MODULE=on
mkdir -p "$UP" "$GOMODCACHE" "$GOCACHE"

if command -v flock >/dev/null; then
  exec 9>"$UP/.build.lock"
  if ! flock -n 9; then
    echo "build-upstream-controller: waiting for another build holding $UP/.build.lock ..."
    flock 9
  fi
fi

log() { echo "build-upstream-controller: $*"; }
t0=$(date +%s)

if [[ -x "$OUT/trainer-controller-manager" && -d "$OUT/module/manifests" && -d "$OUT/crds" ]]; then
  log "trainer-controller-manager $TRAINER_VERSION: present ($OUT)"
  exit 0
fi
mkdir -p "$OUT"

# The module's files (CRDs, webhooks, runtimes, examples) from its zip.
dir="$(cd "$UP" && go mod download -json "$MOD@$TRAINER_VERSION" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')"
[[ -d "$dir/manifests/base/crds" ]] || { echo "build-upstream-controller: no manifests in $dir" >&2; exit 1; }
ln -sfn "$dir" "$OUT/module"

# The CRDs the controller needs: its own, and the coscheduling PodGroup (scheduler-plugins).
if [[ ! -d "$OUT/crds" ]]; then
  sp_version="$(sed -n 's#^[[:space:]]*sigs.k8s.io/scheduler-plugins \(v[^ ]*\).*#\1#p' "$dir/go.mod" | head -1)"
  [[ -n "$sp_version" ]] || { echo "build-upstream-controller: no scheduler-plugins in $dir/go.mod" >&2; exit 1; }
  spdir="$(cd "$UP" && go mod download -json "sigs.k8s.io/scheduler-plugins@$sp_version" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')"
  rm -rf "$OUT/crds.tmp" && mkdir -p "$OUT/crds.tmp"
  cp "$dir"/manifests/base/crds/trainer.kubeflow.org_*.yaml "$OUT/crds.tmp/"
  cp "$spdir/config/crd/bases/scheduling.x-k8s.io_podgroups.yaml" "$OUT/crds.tmp/"
  chmod -R u+w "$OUT/crds.tmp"
  mv "$OUT/crds.tmp" "$OUT/crds"
fi

if [[ ! -x "$OUT/trainer-controller-manager" ]]; then
  log "building trainer-controller-manager $TRAINER_VERSION ($PKG) ..."
  flags=(-trimpath -ldflags "-s -w")
  [[ -n "${BUILD_JOBS:-}" ]] && flags+=(-p "$BUILD_JOBS")
  tmp="$(mktemp -d "$UP/.build.XXXXXX")"
  if ! GOBIN="$tmp" go install "${flags[@]}" "$PKG@$TRAINER_VERSION" >"$tmp.log" 2>&1; then
    echo "build-upstream-controller: FAILED: go install $PKG@$TRAINER_VERSION" >&2
    cat "$tmp.log" >&2
    rm -rf "$tmp" "$tmp.log"
    exit 1
  fi
  mv -f "$tmp/trainer-controller-manager" "$OUT/trainer-controller-manager"
  rm -rf "$tmp" "$tmp.log"
fi
log "trainer-controller-manager $TRAINER_VERSION ... done in $(( $(date +%s) - t0 ))s ($(du -h "$OUT/trainer-controller-manager" | cut -f1), $OUT)"
