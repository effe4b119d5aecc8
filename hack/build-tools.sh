#!/usr/bin/env bash
# Build the deployment tools the tests use (helm, kustomize) from the Go module proxy and cache
# them by version outside the repo, beside the test control plane (hack/build-control-plane.sh).
#
#   hack/build-tools.sh [TOOL...]              default: helm kustomize
#   hack/build-tools.sh --print-path TOOL      print the cached binary's path and exit
#
# Tools:
#   helm        helm.sh/helm/v3/cmd/helm@$HELM_VERSION, with the version ldflags of helm's own
#               Makefile: without them `helm template` assumes Kubernetes v1.20.0 and refuses a
#               chart with `kubeVersion: >=1.29.0-0` ("incompatible with Kubernetes v1.20.0")
#   kustomize   sigs.k8s.io/kustomize/kustomize/v5@$KUSTOMIZE_VERSION (v5.8.3 needs go >= 1.27)
#
# Layout: $TRAINJOB_CACHE/tools/<tool>-<version>/<tool> (TRAINJOB_CACHE default ~/.cache/trainjob);
# GOMODCACHE/GOCACHE are the control plane's ($TRAINJOB_CACHE/control-plane/go/{mod,build}), so
# the modules both need are downloaded and compiled once. A tool already there is not rebuilt.
# Cold on 2 shared cores: helm ~4 min, kustomize ~1.5 min; warm: no time.
#
# Env overrides: HELM_VERSION (v3.22.0), KUSTOMIZE_VERSION (v5.8.2), TRAINJOB_CACHE, GOPROXY,
# GOTOOLCHAIN (default: local).
set -euo pipefail

HELM_VERSION="${HELM_VERSION:-v3.22.0}"
KUSTOMIZE_VERSION="${KUSTOMIZE_VERSION:-v5.8.2}"
CACHE_ROOT="${TRAINJOB_CACHE:-$HOME/.cache/trainjob}"
TOOLS="$CACHE_ROOT/tools"

tool_path() {
  case "$1" in
    helm) echo "$TOOLS/helm-$HELM_VERSION/helm" ;;
    kustomize) echo "$TOOLS/kustomize-$KUSTOMIZE_VERSION/kustomize" ;;
    *) echo "unknown tool: $1 (helm kustomize)" >&2; return 2 ;;
  esac
}

if [[ "${1:-}" == "--print-path" ]]; then
  tool_path "${2:?--print-path needs a tool}"
  exit 0
fi
if [[ "${1:-}" == "-h" || "${1:-}" == "--help" ]]; then
  sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'
  exit 0
fi

WANT=("$@")
[[ ${#WANT[@]} -gt 0 ]] || WANT=(helm kustomize)
for t in "${WANT[@]}"; do tool_path "$t" >/dev/null; done

command -v go >/dev/null || { echo "build-tools: 'go' is not on PATH" >&2; exit 1; }
export GOMODCACHE="$CACHE_ROOT/control-plane/go/mod"
export GOCACHE="$CACHE_ROOT/control-plane/go/build"
export GOFLAGS="-mod=mod -modcacherw -buildvcs=false"
export CGO_ENABLED=0
export GOTOOLCHAIN="${GOTOOLCHAIN:-local}"
export GOWORK=off
mkdir -p "$TOOLS" "$GOMODCACHE" "$GOCACHE"

if command -v flock >/dev/null; then
  exec 9>"$TOOLS/.build.lock"
  if ! flock -n 9; then
    echo "build-tools: waiting for another build holding $TOOLS/.build.lock ..."
    flock 9
  fi
fi

log() { echo "build-tools: $*"; }

# go install PKG@VERSION into the tool's dir (GOBIN), through a temporary name.
install() {
  local tool="$1" pkg="$2" ldflags="$3" out t0
  out="$(tool_path "$tool")"
  if [[ -x "$out" ]]; then log "$tool: present ($out)"; return; fi
  t0=$(date +%s)
  log "building $tool ($pkg) ..."
  local tmp; tmp="$(mktemp -d "$TOOLS/.$tool.XXXXXX")"
  if ! GOBIN="$tmp" go install -trimpath -ldflags "$ldflags" "$pkg" >"$tmp.log" 2>&1; then
    echo "build-tools: FAILED: go install $pkg" >&2
    cat "$tmp.log" >&2
    rm -rf "$tmp" "$tmp.log"
    return 1
  fi
  mkdir -p "$(dirname "$out")"
  mv -f "$tmp/$tool" "$out"
  rm -rf "$tmp" "$tmp.log"
  log "building $tool ... done in $(( $(date +%s) - t0 ))s ($("$out" version 2>&1 | head -1))"
}

build_helm() {
  # helm's Makefile: Kubernetes major/minor of its default capabilities from its client-go.
  local gomod client_go major minor ld
  gomod="$(go mod download -json "helm.sh/helm/v3@$HELM_VERSION" | sed -n 's/^\t"GoMod": "\(.*\)",$/\1/p')"
  client_go="$(sed -n 's#^[[:space:]]*k8s.io/client-go \(v[0-9.]*\).*#\1#p' "$gomod" | head -1)"
  [[ -n "$client_go" ]] || { echo "build-tools: no k8s.io/client-go in $gomod" >&2; return 1; }
  major=$(( $(cut -d. -f1 <<<"${client_go#v}") + 1 ))
  minor="$(cut -d. -f2 <<<"$client_go")"
  ld="-s -w -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION"
  ld+=" -X helm.sh/helm/v3/internal/version.gitTreeState=clean"
  for p in pkg/chartutil pkg/lint/rules; do
    ld+=" -X helm.sh/helm/v3/$p.k8sVersionMajor=$major -X helm.sh/helm/v3/$p.k8sVersionMinor=$minor"
  done
  install helm "helm.sh/helm/v3/cmd/helm@$HELM_VERSION" "$ld"
}

build_kustomize() {
  install kustomize "sigs.k8s.io/kustomize/kustomize/v5@$KUSTOMIZE_VERSION" "-s -w"
}

for t in "${WANT[@]}"; do
  case "$t" in
    helm) build_helm ;;
    kustomize) build_kustomize ;;
  esac
done
