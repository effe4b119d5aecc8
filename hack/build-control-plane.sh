#!/usr/bin/env bash
# Build the binaries of a real Kubernetes test control plane from the Go module proxy and cache
# them by version outside the repo (see shared/reference/test-control-plane.md).
#
#   hack/build-control-plane.sh [COMPONENT|GROUP...]   default: the group control-plane
#   hack/build-control-plane.sh --print-dir COMPONENT   print the cache dir of COMPONENT and exit
#   hack/build-control-plane.sh --list GROUP            print the components of GROUP and exit
#
# Groups:
#   control-plane              etcd kube-apiserver jobset-crds (what `hack/testenv up` needs)
#   cluster                    control-plane + kube-controller-manager kube-scheduler kwok jobset
#                              kueue scheduler-plugins (what `hack/testenv up --cluster` needs)
#   real-node                  cluster + kubelet coredns (what `hack/testenv up --cluster --real-node` needs)
#
# Components:
#   etcd                       go.etcd.io/etcd/server/v3@$ETCD_VERSION (wrapper module: server/go.mod
#                              has replace directives, so `go install` refuses it)
#   kube-apiserver, kube-controller-manager, kube-scheduler, kubectl, kubelet
#                              k8s.io/kubernetes@$K8S_VERSION through a wrapper module that replaces
#                              every staging module (listed in k8s's own go.mod) with its v0.Y.Z tag
#   jobset-crds                the JobSet CRD YAMLs, taken from the sigs.k8s.io/jobset module zip
#   kwok                       cmd/kwok of sigs.k8s.io/kwok@$KWOK_VERSION (fake nodes and pod stages), and
#                              KWOK's own node stages from its module
#   jobset                     the JobSet controller (the root package of sigs.k8s.io/jobset@$JOBSET_VERSION),
#                              and its webhook configuration from the module zip
#   kueue                      cmd/kueue of sigs.k8s.io/kueue@$KUEUE_VERSION, its CRDs and webhook configuration
#   scheduler-plugins          cmd/scheduler of sigs.k8s.io/scheduler-plugins@$SCHEDULER_PLUGINS_VERSION
#                              (kube-scheduler with the Coscheduling plugin), and its CRDs (PodGroup)
#   coredns                    the root package of github.com/coredns/coredns@$COREDNS_VERSION (the
#                              real node's cluster DNS)
#                              These five are built inside a copy of their module's source with its own
#                              go.mod and go.sum (-mod=readonly), as their Makefiles build them: not by
#                              `go install pkg@version`, which needs the proxy's version list (refused
#                              here for jobset) and refuses go.mod replace directives (scheduler-plugins)
#
# Cold build times (2 cores): see hack/README.md. Components are built one after the other, each
# under its own lock (<cache>/.build-<component>.lock), so a build of one component waits only for
# another build of that same component (a `hack/testenv up` started while CI builds the cluster
# components in the background gets etcd and kube-apiserver as soon as those are done).
#
# Layout (each component skipped when its output is already there):
#   $TRAINJOB_CACHE/control-plane/<component>-<version>/<binary>       (TRAINJOB_CACHE default ~/.cache/trainjob)
#   $TRAINJOB_CACHE/control-plane/jobset-crds-<version>/*.yaml
#   $TRAINJOB_CACHE/control-plane/go/{mod,build}                        GOMODCACHE / GOCACHE
#   $TRAINJOB_CACHE/control-plane/src/<wrapper>-<version>/go.mod        wrapper modules
#
# Env overrides: K8S_VERSION (v1.36.3), ETCD_VERSION (v3.6.8, the etcd client k8s v1.36.3 pins),
# JOBSET_VERSION (v0.12.0), KWOK_VERSION (v0.8.0), KUEUE_VERSION (v0.17.0),
# SCHEDULER_PLUGINS_VERSION (v0.34.7), TRAINJOB_CACHE, GOPROXY, GOTOOLCHAIN (default: local),
# BUILD_JOBS (go -p).
set -euo pipefail
shopt -s inherit_errexit

K8S_VERSION="${K8S_VERSION:-v1.36.3}"
ETCD_VERSION="${ETCD_VERSION:-v3.6.8}"
JOBSET_VERSION="${JOBSET_VERSION:-v0.12.0}"
KWOK_VERSION="${KWOK_VERSION:-v0.8.0}"
KUEUE_VERSION="${KUEUE_VERSION:-v0.17.0}"
SCHEDULER_PLUGINS_VERSION="${SCHEDULER_PLUGINS_VERSION:-v0.34.7}"
COREDNS_VERSION="${COREDNS_VERSION:-v1.14.7}"
CACHE_ROOT="${TRAINJOB_CACHE:-$HOME/.cache/trainjob}"
CP="$CACHE_ROOT/control-plane"

component_dir() {
  case "$1" in
    etcd) echo "$CP/etcd-$ETCD_VERSION" ;;
    kube-apiserver|kube-controller-manager|kube-scheduler|kubectl|kubelet) echo "$CP/$1-$K8S_VERSION" ;;
    jobset-crds) echo "$CP/jobset-crds-$JOBSET_VERSION" ;;
    kwok) echo "$CP/kwok-$KWOK_VERSION" ;;
    jobset) echo "$CP/jobset-$JOBSET_VERSION" ;;
    kueue) echo "$CP/kueue-$KUEUE_VERSION" ;;
    scheduler-plugins) echo "$CP/scheduler-plugins-$SCHEDULER_PLUGINS_VERSION" ;;
    coredns) echo "$CP/coredns-$COREDNS_VERSION" ;;
    *) echo "unknown component: $1 (etcd kube-apiserver kube-controller-manager kube-scheduler kubectl" \
         "jobset-crds kwok jobset kueue scheduler-plugins kubelet coredns; groups: control-plane cluster real-node)" >&2; return 2 ;;
  esac
}

GROUP_CONTROL_PLANE=(etcd kube-apiserver jobset-crds)
GROUP_CLUSTER=("${GROUP_CONTROL_PLANE[@]}" kube-controller-manager kube-scheduler kwok jobset kueue scheduler-plugins)
GROUP_REAL_NODE=("${GROUP_CLUSTER[@]}" kubelet coredns)
expand() {
  case "$1" in
    control-plane) echo "${GROUP_CONTROL_PLANE[@]}" ;;
    cluster) echo "${GROUP_CLUSTER[@]}" ;;
    real-node) echo "${GROUP_REAL_NODE[@]}" ;;
    *) echo "$1" ;;
  esac
}

if [[ "${1:-}" == "--print-dir" ]]; then
  component_dir "${2:?--print-dir needs a component}"
  exit 0
fi
if [[ "${1:-}" == "--list" ]]; then
  expand "${2:?--list needs a group}"
  exit 0
fi
if [[ "${1:-}" == "-h" || "${1:-}" == "--help" ]]; then
  sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'
  exit 0
fi

COMPONENTS=()
for a in "${@:-control-plane}"; do
  for c in $(expand "$a"); do
    component_dir "$c" >/dev/null
    [[ " ${COMPONENTS[*]} " == *" $c "* ]] || COMPONENTS+=("$c")
  done
done

command -v go >/dev/null || { echo "build-control-plane: 'go' is not on PATH" >&2; exit 1; }

export GOMODCACHE="$CP/go/mod"
export GOCACHE="$CP/go/build"
export GOFLAGS="-mod=mod -modcacherw -buildvcs=false"  # -modcacherw: `rm -rf` of the cache works
export CGO_ENABLED=0
export GOTOOLCHAIN="${GOTOOLCHAIN:-local}"
export GOWORK=off
export GO111MODULE=on
mkdir -p "$CP" "$GOMODCACHE" "$GOCACHE" "$CP/src"

now() { date +%s; }
log() { echo "build-control-plane: $*"; }

# One build of a component at a time per cache (parallel pytest sessions, CI's background build,
# several worktrees): each component has its own lock, taken around its build only.
with_lock() {
  local name="$1"; shift
  if ! command -v flock >/dev/null; then "$@"; return; fi
  local lockf="$CP/.build-$name.lock" fd
  exec {fd}>"$lockf"
  if ! flock -n "$fd"; then
    log "waiting for another build holding $lockf ..." >&2
    flock "$fd"
  fi
  "$@"  # not `|| ...`: that would turn off set -e inside; a failure exits (and frees the lock)
  exec {fd}>&-
}
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
    run_logged "$w/build.log" go build "${go_build_flags[@]}" -ldflags "-s -w" -o "$out/etcd.tmp.$$" go.etcd.io/etcd/server/v3
    mv -f "$out/etcd.tmp.$$" "$out/etcd"
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
  local w; w="$(with_lock kubernetes-wrapper k8s_wrapper)"
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
    with_lock "kubernetes-wrapper" run_logged "$w/get-$comp.log" go get "k8s.io/kubernetes/cmd/$comp@$K8S_VERSION"
    log "  modules resolved in $(( $(now) - tg ))s; compiling ..."
    run_logged "$w/build-$comp.log" go build "${go_build_flags[@]}" -ldflags "$ld" -o "$out/$comp.tmp.$$" "k8s.io/kubernetes/cmd/$comp"
    mv -f "$out/$comp.tmp.$$" "$out/$comp"
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

# ---------------------------------------------------------------------------------------------
# Controllers and KWOK: each built inside a copy of its own module's source (from the module
# zip), with exactly its go.mod and go.sum (-mod=readonly), as its Makefile builds it. Not
# `go install pkg@version`: that asks the proxy for the module's version list (deprecations),
# which this proxy refuses for some modules (403 for sigs.k8s.io/jobset), and it refuses a
# go.mod with replace directives (sigs.k8s.io/scheduler-plugins pins k8s.io/kubernetes so).

# The source dir of MODULE@VERSION in GOMODCACHE (downloaded if needed).
module_dir() {
  local dir
  dir="$(cd "$CP/src" && go mod download -json "$1" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')"
  [[ -d "$dir" ]] || { echo "build-control-plane: go mod download $1 gave no source dir" >&2; return 1; }
  echo "$dir"
}

# build_in_module NAME MODULE@VERSION PKG OUT BIN LDFLAGS [REPLACE...]: build ./PKG of the module
# into OUT/BIN. A REPLACE (old=new@version, for `go mod edit -replace`) changes the copy's go.mod
# first (then go.sum is completed from the proxy: -mod=mod).
build_in_module() {
  local name="$1" modver="$2" pkg="$3" out="$4" bin="$5" ld="$6"; shift 6
  local dir w="$CP/src/$name" mode=readonly r
  dir="$(module_dir "$modver")"
  if [[ ! -f "$w/go.mod" ]]; then
    rm -rf "$w.tmp"; cp -r "$dir" "$w.tmp"; chmod -R u+w "$w.tmp"; rm -rf "$w"; mv "$w.tmp" "$w"
  fi
  if [[ $# -gt 0 ]]; then
    mode=mod
    for r in "$@"; do (cd "$w" && go mod edit -replace="$r"); log "  $name: replace $r"; done
  fi
  mkdir -p "$out"
  (
    cd "$w"
    run_logged "$w/build.log" go build -mod="$mode" "${go_build_flags[@]}" -ldflags "$ld" -o "$out/$bin.tmp.$$" "./$pkg"
    mv -f "$out/$bin.tmp.$$" "$out/$bin"
  )
}

# Copy files matching GLOB from SRC into DEST/SUB (made writable: the module cache is read-only).
copy_manifests() {
  local src="$1" dest="$2"; shift 2
  mkdir -p "$dest"
  local f
  for f in "$@"; do
    compgen -G "$src/$f" >/dev/null || { echo "build-control-plane: no $f in $src" >&2; return 1; }
    cp $src/$f "$dest/"
  done
  chmod -R u+w "$dest"
}

build_kwok() {
  local out; out="$(component_dir kwok)"
  if [[ -x "$out/kwok" && -d "$out/stages" ]]; then log "kwok $KWOK_VERSION: present ($out/kwok)"; return; fi
  local t0; t0=$(now)
  # KWOK's own node stages (what kwokctl gives its nodes); the pod stages are ours (hack/kwok/).
  local dir; dir="$(module_dir "sigs.k8s.io/kwok@$KWOK_VERSION")"
  rm -rf "$out/stages"
  copy_manifests "$dir/kustomize/stage/node" "$out/stages" fast/node-initialize.yaml heartbeat-with-lease/node-heartbeat-with-lease.yaml
  [[ -x "$out/kwok" ]] && { log "kwok $KWOK_VERSION: present ($out/kwok)"; return; }
  log "building kwok $KWOK_VERSION (sigs.k8s.io/kwok/cmd/kwok) ..."
  build_in_module "kwok-$KWOK_VERSION" "sigs.k8s.io/kwok@$KWOK_VERSION" cmd/kwok "$out" kwok \
    "-s -w -X sigs.k8s.io/kwok/pkg/consts.Version=${KWOK_VERSION#v} -X sigs.k8s.io/kwok/pkg/consts.KubeVersion=${K8S_VERSION#v}"
  log "building kwok $KWOK_VERSION ... done in $(( $(now) - t0 ))s ($(du -h "$out/kwok" | cut -f1))"
}

build_jobset() {
  local out; out="$(component_dir jobset)"
  if [[ -x "$out/jobset" && -f "$out/webhook/manifests.yaml" ]]; then log "jobset $JOBSET_VERSION: present ($out/jobset)"; return; fi
  local t0; t0=$(now)
  local dir; dir="$(module_dir "sigs.k8s.io/jobset@$JOBSET_VERSION")"
  rm -rf "$out/webhook"
  copy_manifests "$dir/config/components/webhook" "$out/webhook" manifests.yaml
  if [[ ! -x "$out/jobset" ]]; then
    log "building the JobSet controller $JOBSET_VERSION (sigs.k8s.io/jobset) ..."
    build_in_module "jobset-$JOBSET_VERSION" "sigs.k8s.io/jobset@$JOBSET_VERSION" . "$out" jobset \
      "-s -w -X sigs.k8s.io/jobset/pkg/version.GitVersion=$JOBSET_VERSION"
  fi
  log "building the JobSet controller $JOBSET_VERSION ... done in $(( $(now) - t0 ))s ($(du -h "$out/jobset" | cut -f1))"
}

build_kueue() {
  local out; out="$(component_dir kueue)"
  if [[ -x "$out/kueue" && -d "$out/crds" && -f "$out/webhook/manifests.yaml" ]]; then
    log "kueue $KUEUE_VERSION: present ($out/kueue)"; return
  fi
  local t0; t0=$(now)
  local dir; dir="$(module_dir "sigs.k8s.io/kueue@$KUEUE_VERSION")"
  rm -rf "$out/crds" "$out/webhook"
  copy_manifests "$dir/config/components/crd/bases" "$out/crds" '*.yaml'
  copy_manifests "$dir/config/components/webhook" "$out/webhook" manifests.yaml
  if [[ ! -x "$out/kueue" ]]; then
    log "building Kueue $KUEUE_VERSION (sigs.k8s.io/kueue/cmd/kueue) ..."
    build_in_module "kueue-$KUEUE_VERSION" "sigs.k8s.io/kueue@$KUEUE_VERSION" cmd/kueue "$out" kueue \
      "-s -w -X sigs.k8s.io/kueue/pkg/version.GitVersion=$KUEUE_VERSION"
  fi
  log "building Kueue $KUEUE_VERSION ... done in $(( $(now) - t0 ))s ($(du -h "$out/kueue" | cut -f1))"
}

build_scheduler_plugins() {
  local out; out="$(component_dir scheduler-plugins)"
  if [[ -x "$out/kube-scheduler" && -d "$out/crds" ]]; then
    log "scheduler-plugins $SCHEDULER_PLUGINS_VERSION: present ($out/kube-scheduler)"; return
  fi
  local t0; t0=$(now)
  local dir; dir="$(module_dir "sigs.k8s.io/scheduler-plugins@$SCHEDULER_PLUGINS_VERSION")"
  rm -rf "$out/crds"
  copy_manifests "$dir/config/crd/bases" "$out/crds" scheduling.x-k8s.io_podgroups.yaml scheduling.x-k8s.io_elasticquotas.yaml
  if [[ ! -x "$out/kube-scheduler" ]]; then
    # Its go.mod replaces k8s.io/kubernetes and the staging modules with published versions
    # (hence built in its own module). The Kubernetes version it is built on names the binary's
    # version, as its release images report: kube-scheduler's feature gates are versioned by it.
    local k8s; k8s="$(sed -n 's#^[[:space:]]*k8s.io/kubernetes => k8s.io/kubernetes \(v[0-9.]*\).*#\1#p' "$dir/go.mod" | head -1)"
    [[ -n "$k8s" ]] || { echo "build-control-plane: no k8s.io/kubernetes replace in $dir/go.mod" >&2; return 1; }
    log "building scheduler-plugins $SCHEDULER_PLUGINS_VERSION (cmd/scheduler on Kubernetes $k8s) ..."
    local major minor ld
    major="$(cut -d. -f1 <<<"${k8s#v}")"; minor="$(cut -d. -f2 <<<"$k8s")"
    ld="-s -w -X k8s.io/component-base/version.gitVersion=$k8s"
    ld+=" -X k8s.io/component-base/version.gitMajor=$major -X k8s.io/component-base/version.gitMinor=$minor"
    ld+=" -X k8s.io/component-base/version.gitTreeState=clean"
    ld+=" -X k8s.io/component-base/version.buildDate=1970-01-01T00:00:00Z"
    # The Go module proxy here does not serve k8s.io/csi-translation-lib v0.34.6/v0.34.7 (403 "not
    # available"; v0.34.5 it does), which v0.34.7's go.mod pins and kube-scheduler's volume-limits
    # plugin imports: that one library is taken at v0.34.5 (SCHEDULER_PLUGINS_REPLACES, space
    # separated, overrides the list; empty builds the go.mod as it is).
    # shellcheck disable=SC2086
    build_in_module "scheduler-plugins-$SCHEDULER_PLUGINS_VERSION" \
      "sigs.k8s.io/scheduler-plugins@$SCHEDULER_PLUGINS_VERSION" cmd/scheduler "$out" kube-scheduler "$ld" \
      ${SCHEDULER_PLUGINS_REPLACES-k8s.io/csi-translation-lib=k8s.io/csi-translation-lib@v0.34.5}
  fi
  log "building scheduler-plugins $SCHEDULER_PLUGINS_VERSION ... done in $(( $(now) - t0 ))s ($(du -h "$out/kube-scheduler" | cut -f1))"
}

build_coredns() {
  local out; out="$(component_dir coredns)"
  if [[ -x "$out/coredns" ]]; then log "coredns $COREDNS_VERSION: present ($out/coredns)"; return; fi
  local t0; t0=$(now)
  log "building CoreDNS $COREDNS_VERSION (github.com/coredns/coredns) ..."
  build_in_module "coredns-$COREDNS_VERSION" "github.com/coredns/coredns@$COREDNS_VERSION" . "$out" coredns \
    "-s -w -X github.com/coredns/coredns/coremain.GitCommit=$COREDNS_VERSION"
  log "building CoreDNS $COREDNS_VERSION ... done in $(( $(now) - t0 ))s ($(du -h "$out/coredns" | cut -f1))"
}

build_component() {
  case "$1" in
    coredns) build_coredns ;;
    etcd) build_etcd ;;
    jobset-crds) fetch_jobset_crds ;;
    kwok) build_kwok ;;
    jobset) build_jobset ;;
    kueue) build_kueue ;;
    scheduler-plugins) build_scheduler_plugins ;;
    *) build_k8s "$1" ;;
  esac
}

# CPU seconds (user + system) of the finished child processes (the compilers, mostly), into
# CPU_NOW. Not `$(cpu_seconds)`: a command substitution is a forked shell, whose children's times
# start at zero, so `times` there reads nothing of the builds.
CPU_NOW=0
cpu_seconds() {
  local f="$CP/.times.$$"
  times >"$f"
  CPU_NOW=$(tail -1 "$f" | awk '{ s = 0; for (i = 1; i <= 2; i++) { split($i, a, "m"); s += a[1] * 60 + a[2] } printf "%d", s }')
  rm -f "$f"
}

log "cache $CP; go $(go env GOVERSION); components: ${COMPONENTS[*]}"
for c in "${COMPONENTS[@]}"; do
  cpu_seconds; cpu0=$CPU_NOW
  with_lock "$c" build_component "$c"
  cpu_seconds
  # the CPU time says what a build costs on idle cores (wall time depends on what else runs)
  if (( CPU_NOW - cpu0 > 2 )); then log "  $c: $(( CPU_NOW - cpu0 ))s of CPU"; fi
done
log "all done in $(( $(now) - TOTAL_START ))s"
