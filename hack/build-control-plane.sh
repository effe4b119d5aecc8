#!/usr/bin/env bash
# Build the binaries of a real Kubernetes test control plane from the Go module proxy and cache
# them by version outside the repo (see shared/reference/test-control-plane.md).
#
#   hack/build-control-plane.sh [COMPONENT...]      default: etcd kube-apiserver jobset-crds
#   hack/build-control-plane.sh --print-dir COMPONENT   print the cache dir of COMPONENT and exit
#
# Components:
#   etcd                       go.etcd.io/etcd/server/v3@$ETCD_VERSION (wrapper module: server/go.mod
#                              has replace directives, so `go install` refuses it)
#   kube-apiserver, kube-controller-manager, kube-scheduler, kubectl
#                              k8s.io/kubernetes@$K8S_VERSION through a wrapper module that replaces
#                              every staging module (listed in k8s's own go.mod) with its v0.Y.Z tag
#   jobset-crds                the JobSet CRD YAMLs, taken from the sigs.k8s.io/jobset module zip
#
# Layout (each component skipped when its output is already there):
#   $TRAINJOB_CACHE/control-plane/<component>-<version>/<binary>       (TRAINJOB_CACHE default ~/.cache/trainjob)
#   $TRAINJOB_CACHE/control-plane/jobset-crds-<version>/*.yaml
#   $TRAINJOB_CACHE/control-plane/go/{mod,build}                        GOMODCACHE / GOCACHE
#   $TRAINJOB_CACHE/control-plane/src/<wrapper>-<version>/go.mod        wrapper modules
#
# Env overrides: K8S_VERSION (v1.36.3), ETCD_VERSION (v3.6.8, the etcd client k8s v1.36.3 pins),
# JOBSET_VERSION (v0.12.0), TRAINJOB_CACHE, GOPROXY, GOTOOLCHAIN (default: local), BUILD_JOBS (go -p).
set -euo pipefail

K8S_VERSION="${K8S_VERSION:-v1.36.3}"
ETCD_VERSION="${ETCD_VERSION:-v3.6.8}"
JOBSET_VERSION="${JOBSET_VERSION:-v0.12.0}"
CACHE_ROOT="${TRAINJOB_CACHE:-$HOME/.cache/trainjob}"
CP="$CACHE_ROOT/control-plane"

component_dir() {
  case "$1" in
    etcd) echo "$CP/etcd-$ETCD_VERSION" ;;
    kube-apiserver|kube-controller-manager|kube-scheduler|kubectl) echo "$CP/$1-$K8S_VERSION" ;;
    jobset-crds) echo "$CP/jobset-crds-$JOBSET_VERSION" ;;
    *) echo "unknown component: $1 (etcd kube-apiserver kube-controller-manager kube-scheduler kubectl jobset-crds)" >&2; return 2 ;;
  esac
}

if [[ "${1:-}" == "--print-dir" ]]; then
  component_dir "${2:?--print-dir needs a component}"
  exit 0
fi
if [[ "${1:-}" == "-h" || "${1:-}" == "--help" ]]; then
  sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'
  exit 0
fi

COMPONENTS=("$@")
[[ ${#COMPONENTS[@]} -gt 0 ]] || COMPONENTS=(etcd kube-apiserver jobset-crds)
for c in "${COMPONENTS[@]}"; do component_dir "$c" >/dev/null; done

command -v go >/dev/null || { echo "build-control-plane: 'go' is not on PATH" >&2; exit 1; }

export GOMODCACHE="$CP/go/mod"
export GOCACHE="$CP/go/build"
export GOFLAGS="-mod=mod -modcacherw -buildvcs=false"  # -modcacherw: `rm -rf` of the cache works
export CGO_ENABLED=0
export GOTOOLCHAIN="${GOTOOLCHAIN:-local}"
export GOWORK=off
export GO111MODULE=on
mkdir -p "$CP" "$GOMODCACHE" "$GOCACHE" "$CP/src"

# One build at a time per cache (parallel pytest sessions, CI retries).
if command -v flock >/dev/null; then
  exec 9>"$CP/.build.lock"
  if ! flock -n 9; then
    echo "build-control-plane: waiting for another build holding $CP/.build.lock ..."
    flock 9
  fi
fi

now() { date +%s; }
log() { echo "build-control-plane: $*"; }
TOTAL_START=$(now)

# Run a command quietly; print its full output if it fails.
run_logged() {
  local logf="$1"; shift
  if ! "$@" >"$logf" 2>&1; then
    echo "build-control-plane: FAILED: $*" >&2
    cat "$logf" >&2
    return 1
  fi
}

go_build_flags=(-trimpath)
[[ -n "${BUILD_JOBS:-}" ]] && go_build_flags+=(-p "$BUILD_JOBS")

# ---------------------------------------------------------------------------------------------
# etcd: wrapper module requiring go.etcd.io/etcd/server/v3 (its root package is `main`).
build_etcd() {
  local out; out="$(component_dir etcd)"
  if [[ -x "$out/etcd" ]]; then log "etcd $ETCD_VERSION: present ($out/etcd)"; return; fi
  local t0; t0=$(now)
  local w="$CP/src/etcd-$ETCD_VERSION"
  mkdir -p "$w" "$out"
  log "building etcd $ETCD_VERSION (wrapper module $w) ..."
  (
    cd "$w"
    if [[ ! -f go.mod ]]; then
      local gomod goline
      gomod="$(go mod download -json "go.etcd.io/etcd/server/v3@$ETCD_VERSION" | sed -n 's/^\t"GoMod": "\(.*\)",$/\1/p')"
      goline="$(sed -n 's/^go \([0-9.]*\)$/\1/p' "$gomod" | head -1)"
      printf 'module local/trainjob-etcd\n\ngo %s\n' "${goline:-1.24.0}" >go.mod
      go mod edit -require="go.etcd.io/etcd/server/v3@$ETCD_VERSION"
    fi
    log "  resolving modules (go mod download) ..."
    run_logged "$w/get.log" go get "go.etcd.io/etcd/server/v3@$ETCD_VERSION"
    log "  compiling ..."
    run_logged "$w/build.log" go build "${go_build_flags[@]}" -ldflags "-s -w" -o "$out/etcd.tmp" go.etcd.io/etcd/server/v3
    mv -f "$out/etcd.tmp" "$out/etcd"
  )
  log "building etcd $ETCD_VERSION ... done in $(( $(now) - t0 ))s ($("$out/etcd" --version | head -1))"
}

# ---------------------------------------------------------------------------------------------
# Kubernetes: wrapper module requiring k8s.io/kubernetes and replacing each staging module with
# its published v0.Y.Z tag (the list comes from k8s's own go.mod, served by the module proxy).
k8s_wrapper() {
  local w="$CP/src/kubernetes-$K8S_VERSION"
  if [[ -f "$w/.ready" ]]; then echo "$w"; return; fi
  mkdir -p "$w"
  local t0; t0=$(now)
  log "preparing wrapper module for k8s.io/kubernetes $K8S_VERSION ($w) ..." >&2
  (
    cd "$w"
    local gomod staging_ver="v0.${K8S_VERSION#v1.}"
    gomod="$(go mod download -json "k8s.io/kubernetes@$K8S_VERSION" | sed -n 's/^\t"GoMod": "\(.*\)",$/\1/p')"
    [[ -f "$gomod" ]] || { echo "build-control-plane: no go.mod for k8s.io/kubernetes@$K8S_VERSION" >&2; exit 1; }
    {
      echo "module local/trainjob-k8s-bins"
      echo
      grep -E '^go [0-9]' "$gomod" | head -1
      # copy godebug (single line or block) so GODEBUG defaults match upstream builds
      awk '/^godebug \($/ {inb=1} inb {print} inb && /^\)$/ {inb=0; next} /^godebug [^(]/ {print}' "$gomod"
    } >go.mod
    local mods
    mods="$(sed -n 's#^[[:space:]]*\(k8s\.io/[A-Za-z0-9._-]*\) => \./staging/src/.*$#\1#p' "$gomod")"
    [[ -n "$mods" ]] || { echo "build-control-plane: found no staging replaces in $gomod" >&2; exit 1; }
    local args=() m
    for m in $mods; do args+=("-replace=$m=$m@$staging_ver"); done
    go mod edit "${args[@]}" -require="k8s.io/kubernetes@$K8S_VERSION"
    echo "build-control-plane:   $(wc -w <<<"$mods") staging modules pinned at $staging_ver" >&2
    touch .ready
  )
  echo "$w"
  log "  wrapper ready in $(( $(now) - t0 ))s" >&2
}

build_k8s() {
  local comp="$1" out; out="$(component_dir "$comp")"
  if [[ -x "$out/$comp" ]]; then log "$comp $K8S_VERSION: present ($out/$comp)"; return; fi
  local w; w="$(k8s_wrapper)"
  local t0; t0=$(now)
  mkdir -p "$out"
  log "building $comp $K8S_VERSION ..."
  local minor major
  major="$(cut -d. -f1 <<<"${K8S_VERSION#v}")"
  minor="$(cut -d. -f2 <<<"$K8S_VERSION")"
  local ld="-s -w"
  ld+=" -X k8s.io/component-base/version.gitVersion=$K8S_VERSION"
  ld+=" -X k8s.io/component-base/version.gitMajor=$major -X k8s.io/component-base/version.gitMinor=$minor"
  ld+=" -X k8s.io/component-base/version.gitTreeState=clean"
  ld+=" -X k8s.io/component-base/version.buildDate=1970-01-01T00:00:00Z"
  ld+=" -X k8s.io/client-go/pkg/version.gitVersion=$K8S_VERSION"
  ld+=" -X k8s.io/client-go/pkg/version.gitMajor=$major -X k8s.io/client-go/pkg/version.gitMinor=$minor"
  ld+=" -X k8s.io/client-go/pkg/version.gitTreeState=clean"
  (
    cd "$w"
    log "  resolving modules for k8s.io/kubernetes/cmd/$comp (go get; first run downloads ~1 GB) ..."
    local tg; tg=$(now)
    run_logged "$w/get-$comp.log" go get "k8s.io/kubernetes/cmd/$comp@$K8S_VERSION"
    log "  modules resolved in $(( $(now) - tg ))s; compiling ..."
    run_logged "$w/build-$comp.log" go build "${go_build_flags[@]}" -ldflags "$ld" -o "$out/$comp.tmp" "k8s.io/kubernetes/cmd/$comp"
    mv -f "$out/$comp.tmp" "$out/$comp"
  )
  local ver
  if [[ "$comp" == kubectl ]]; then ver="$("$out/$comp" version --client 2>/dev/null | head -1)"; else ver="$("$out/$comp" --version 2>/dev/null | head -1)"; fi
  log "building $comp $K8S_VERSION ... done in $(( $(now) - t0 ))s ($ver, $(du -h "$out/$comp" | cut -f1))"
}

# ---------------------------------------------------------------------------------------------
# JobSet CRDs from the module zip (go mod download gives .Dir).
fetch_jobset_crds() {
  local out; out="$(component_dir jobset-crds)"
  if compgen -G "$out/*.yaml" >/dev/null; then log "jobset CRDs $JOBSET_VERSION: present ($out)"; return; fi
  local t0; t0=$(now)
  log "fetching JobSet CRDs from sigs.k8s.io/jobset@$JOBSET_VERSION ..."
  local dir
  dir="$(cd "$CP/src" && go mod download -json "sigs.k8s.io/jobset@$JOBSET_VERSION" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')"
  [[ -d "$dir/config/components/crd/bases" ]] || { echo "build-control-plane: no CRD dir in $dir" >&2; exit 1; }
  mkdir -p "$out.tmp"
  cp "$dir"/config/components/crd/bases/*.yaml "$out.tmp/"
  [[ -f "$dir/config/components/webhook/manifests.yaml" ]] && mkdir -p "$out.tmp/webhook" \
    && cp "$dir/config/components/webhook/manifests.yaml" "$out.tmp/webhook/"
  chmod -R u+w "$out.tmp"
  rm -rf "$out"; mv "$out.tmp" "$out"
  log "fetching JobSet CRDs ... done in $(( $(now) - t0 ))s ($(ls "$out"/*.yaml | xargs -n1 basename | tr '\n' ' '))"
}

log "cache $CP; go $(go env GOVERSION); components: ${COMPONENTS[*]}"
for c in "${COMPONENTS[@]}"; do
  case "$c" in
    etcd) build_etcd ;;
    jobset-crds) fetch_jobset_crds ;;
    *) build_k8s "$c" ;;
  esac
done
log "all done in $(( $(now) - TOTAL_START ))s"
