#!/usr/bin/env bash
# Build trainjob's images here with podman, cached by content, tagged localhost/trainjob/NAME:dev.
#
#   hack/build-images.sh [TARGET...]     default: controller initializer torch-trainer llm-trainer
#                                        also: torch-trainer-cpu llm-trainer-cpu (TORCH_VARIANT=cpu:
#                                        the trainers less what a CPU never loads, 2.3 GB smaller)
#   hack/build-images.sh --check         exit 0 when podman can run containers here, else say why
#   (a build exits 3 when podman cannot run a container at all, 1 on any other failure)
#   hack/build-images.sh --tag TARGET    print the tag a target gets
#   hack/build-images.sh --base-only     make the base image only (hack/cold-images.sh times it)
#
# Steps:
#   1. the base image (unless BASE_IMAGE names one): Debian bookworm with python3, made with
#      `mmdebstrap --variant=minbase` and `podman import`, as localhost/trainjob/base:bookworm,
#      rebuilt only when its recipe changes (no registry is reachable here, so no official image);
#   2. each target of docker/Containerfile, built with `podman build --isolation chroot` from a
#      copy of what the image needs (pyproject.toml, README.md, src/, manifests/ (the wheel's runtimes and CRDs), docker/);
#      an image whose label trainjob.content equals the hash of that copy, the base image's id and
#      the build arguments is already built and is kept. podman's layer cache does the rest: a
#      change under src/ rebuilds only the layer that installs trainjob.
#   3. a table of the images and their sizes, and the seconds each step took.
#
# torch (the trainers): TORCH_SOURCE=host (default when .venv has the pinned torch for the same
# Python) copies .venv's torch and its CUDA libraries into the image (~5.5 GB, no download);
# TORCH_SOURCE=pypi downloads them inside the build, as a build with a registry does.
#
# Env: BASE_IMAGE (an image to build on instead of the local Debian base, e.g.
# docker.io/library/python:3.11-slim-bookworm), IMAGE_REPO (localhost/trainjob), IMAGE_TAG (dev),
# TORCH_SOURCE (host|pypi), PIP_CERT or SSL_CERT_FILE (a CA bundle pip inside the builds trusts),
# PIP_INDEX_URL, TRAINJOB_CACHE (~/.cache/trainjob; the build context copy and the lock
# live in $TRAINJOB_CACHE/images), CONTAINERS_CONF (default: hack/containers.conf).
# Needs podman, runc and mmdebstrap (scripts/setup-containers.sh installs them).
set -euo pipefail

REPO="$(cd "$(dirname "$0")/.." && pwd)"
ALL=(controller initializer torch-trainer llm-trainer)
EXTRA=(torch-trainer-cpu llm-trainer-cpu)
IMAGE_REPO="${IMAGE_REPO:-localhost/trainjob}"
IMAGE_TAG="${IMAGE_TAG:-dev}"
CACHE="${TRAINJOB_CACHE:-$HOME/.cache/trainjob}/images"
export CONTAINERS_CONF="${CONTAINERS_CONF:-$REPO/hack/containers.conf}"
DEBIAN_SUITE=bookworm
BASE_TAG="$IMAGE_REPO/base:$DEBIAN_SUITE"
# The base's recipe: what mmdebstrap is asked for. Changing it rebuilds the base (and so all).
BASE_PACKAGES="python3,python3-venv,ca-certificates"
BASE_OPTS=(
  --variant=minbase --include="$BASE_PACKAGES" --aptopt='Acquire::Languages "none"'
  --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/doc/*'
  --dpkgopt='path-include=/usr/share/doc/*/copyright' --dpkgopt='path-exclude=/usr/share/locale/*'
  --dpkgopt='path-exclude=/usr/share/info/*' --dpkgopt='path-exclude=/usr/share/lintian/*'
)

say() { printf '==> %s\n' "$*"; }
die() { printf 'build-images: %s\n' "$*" >&2; exit 1; }

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; }

tag_of() { echo "$IMAGE_REPO/$1:$IMAGE_TAG"; }

podman_problem() {
  # Empty when podman runs a container here; else one line saying why not.
  command -v podman >/dev/null || { echo "podman is not installed (scripts/setup-containers.sh)"; return; }
  local out
  if ! out=$(podman info --format '{{.Host.OCIRuntime.Name}}' 2>&1); then
    echo "podman cannot start: $(tail -1 <<<"$out")"
    return
  fi
  local img
  img=$(podman images -q "$BASE_TAG" 2>/dev/null | head -1)
  if [[ -n "$img" ]] && ! out=$(podman run --rm --network none "$img" true 2>&1); then
    echo "podman cannot run a container: $(tail -1 <<<"$out")"
  fi
}

BASE_ONLY=""
case "${1:-}" in
  -h|--help) usage; exit 0 ;;
  --base-only) BASE_ONLY=1; shift ;;
  --tag) tag_of "${2:?--tag needs a target}"; exit 0 ;;
  --check)
    problem=$(podman_problem)
    [[ -z "$problem" ]] || { echo "$problem"; exit 1; }
    exit 0 ;;
esac

WANT=("$@")
[[ ${#WANT[@]} -gt 0 ]] || WANT=("${ALL[@]}")
for t in "${WANT[@]}"; do
  [[ " ${ALL[*]} ${EXTRA[*]} " == *" $t "* ]] || die "unknown target '$t' (targets: ${ALL[*]} ${EXTRA[*]})"
done
command -v podman >/dev/null || die "podman is not installed: run scripts/setup-containers.sh (apt-get install podman runc mmdebstrap)"

mkdir -p "$CACHE"
exec 9>"$CACHE/.lock"
if ! flock -n 9; then
  say "another build-images.sh holds $CACHE/.lock; waiting"
  flock 9
fi

label_of() { podman image inspect --format "{{index .Labels \"$2\"}}" "$1" 2>/dev/null || true; }
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.0f", b - a }'; }
declare -A TOOK

# -- 1. the base ------------------------------------------------------------------------------------
if [[ -n "${BASE_IMAGE:-}" ]]; then
  BASE="$BASE_IMAGE"
  podman image exists "$BASE" || {
    say "pulling $BASE"
    podman pull "$BASE" || die "cannot pull $BASE (no registry reachable?): unset BASE_IMAGE to make a local Debian base"
  }
else
  BASE="$BASE_TAG"
  recipe="mmdebstrap ${BASE_OPTS[*]} $DEBIAN_SUITE"
  recipe_hash=$(printf '%s' "$recipe" | sha256sum | cut -c1-16)
  if [[ "$(label_of "$BASE" trainjob.recipe)" == "$recipe_hash" ]]; then
    say "base $BASE: cached (recipe $recipe_hash)"
  else
    command -v mmdebstrap >/dev/null || die "mmdebstrap is not installed: run scripts/setup-containers.sh"
    say "base $BASE: mmdebstrap $DEBIAN_SUITE with $BASE_PACKAGES (once per recipe; about 2 minutes)"
    t0=$(now)
    tarball="$CACHE/base-$DEBIAN_SUITE.tar"
    rm -f "$tarball"
    mmdebstrap --quiet "${BASE_OPTS[@]}" "$DEBIAN_SUITE" "$tarball"
    podman import --quiet \
      --change "LABEL trainjob.recipe=$recipe_hash" \
      --change 'CMD ["python3"]' \
      "$tarball" "$BASE" >/dev/null
    rm -f "$tarball"
    TOOK[base]=$(secs "$t0")
    say "base $BASE: built in ${TOOK[base]} s"
  fi
fi
[[ -z "$BASE_ONLY" ]] || exit 0
base_id=$(podman image inspect --format '{{.Id}}' "$BASE")
if ! base_python=$(podman run --rm --network none "$BASE" python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>&1); then
  # Exit 3: podman cannot run a container here at all (scripts/test.sh then skips, saying so).
  printf 'build-images: podman cannot run a container here: %s\n' "$(tail -1 <<<"$base_python")" >&2
  exit 3
fi

# -- 2. the build context: exactly what the images need ---------------------------------------------
CTX="$CACHE/context"
rm -rf "$CTX.new"
mkdir -p "$CTX.new"
cp -r "$REPO/pyproject.toml" "$REPO/README.md" "$REPO/src" "$REPO/docker" "$REPO/manifests" "$CTX.new/"
find "$CTX.new" \( -name __pycache__ -o -name '*.pyc' -o -name '*.egg-info' \) -prune -exec rm -rf {} +
rm -rf "$CTX" && mv "$CTX.new" "$CTX"
content=$(cd "$CTX" && find . -type f | LC_ALL=C sort | xargs sha256sum | sha256sum | cut -c1-16)

# -- torch for the trainers -------------------------------------------------------------------------
TORCH_VERSION=$(sed -n 's/.*"torch==\([^"]*\)".*/\1/p' "$REPO/pyproject.toml" | head -1)
[[ -n "$TORCH_VERSION" ]] || die "no torch==VERSION pin in pyproject.toml"
host_site=""
if [[ -x "$REPO/.venv/bin/python" ]]; then
  host_site=$("$REPO/.venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  host_python=$("$REPO/.venv/bin/python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
  host_torch=$("$REPO/.venv/bin/python" -c 'import importlib.metadata as m; print(m.version("torch"))' 2>/dev/null || true)
fi
if [[ -z "${TORCH_SOURCE:-}" ]]; then
  if [[ -n "$host_site" && "${host_torch:-}" == "$TORCH_VERSION" && "$host_python" == "$base_python" ]]; then
    TORCH_SOURCE=host
  else
    TORCH_SOURCE=pypi
    say "torch $TORCH_VERSION for Python $base_python is not in .venv: the trainers download it (~5 GB)"
  fi
fi
case "$TORCH_SOURCE" in
  host)
    [[ -n "$host_site" ]] || die "TORCH_SOURCE=host needs .venv (bash scripts/setup.sh)"
    [[ "$host_python" == "$base_python" ]] || die "TORCH_SOURCE=host: .venv is Python $host_python, the base $BASE is $base_python"
    [[ "${host_torch:-}" == "$TORCH_VERSION" ]] || die "TORCH_SOURCE=host: .venv has torch ${host_torch:-none}, pyproject.toml pins $TORCH_VERSION" ;;
  pypi) ;;
  *) die "TORCH_SOURCE must be host or pypi, not '$TORCH_SOURCE'" ;;
esac

# -- pip inside the builds: this machine's CA bundle (a TLS-inspecting proxy) and index, if any ---
PIP_ARGS=()
pip_conf="$CACHE/pip.conf"
: >"$pip_conf"
ca="${PIP_CERT:-${SSL_CERT_FILE:-}}"
if [[ -n "$ca" && -f "$ca" ]]; then
  PIP_ARGS+=(-v "$ca:/host-ca.crt:ro")
  printf 'cert = /host-ca.crt\n' >>"$pip_conf"
fi
[[ -z "${PIP_INDEX_URL:-}" ]] || printf 'index-url = %s\n' "$PIP_INDEX_URL" >>"$pip_conf"
if [[ -s "$pip_conf" ]]; then
  sed -i '1i [global]' "$pip_conf"
  PIP_ARGS+=(-v "$pip_conf:/host-pip.conf:ro" --build-arg PIP_CONFIG_FILE=/host-pip.conf)
fi

# -- 3. the targets -----------------------------------------------------------------------------------
for target in "${WANT[@]}"; do
  tag=$(tag_of "$target")
  key_parts="$content $base_id $target"
  stage="${target%-cpu}" variant=cuda
  [[ "$target" != *-cpu ]] || variant=cpu
  if [[ "$stage" == *-trainer ]]; then
    key_parts+=" torch=$TORCH_VERSION source=$TORCH_SOURCE"
    [[ "$variant" == cuda ]] || key_parts+=" variant=$variant"
  fi
  key=$(printf '%s' "$key_parts" | sha256sum | cut -c1-16)
  if [[ "$(label_of "$tag" trainjob.content)" == "$key" ]]; then
    say "$tag: cached ($key)"
    continue
  fi
  say "$tag: building (target $stage of docker/Containerfile, TORCH_VARIANT=$variant, on $BASE)"
  args=(
    --isolation chroot --layers --target "$stage" -f "$CTX/docker/Containerfile"
    --build-arg "BASE=$BASE" --build-arg "TORCH_SOURCE=$TORCH_SOURCE" --build-arg "TORCH_VARIANT=$variant"
    --build-arg "TORCH_VERSION=$TORCH_VERSION" --label "trainjob.content=$key" -t "$tag"
  )
  if [[ "$TORCH_SOURCE" == host ]]; then
    args+=(-v "$host_site:/host-site:ro")
  fi
  args+=("${PIP_ARGS[@]}")
  t0=$(now)
  podman build "${args[@]}" "$CTX"
  TOOK[$target]=$(secs "$t0")
  say "$tag: built in ${TOOK[$target]} s"
done

# -- 4. what there is ---------------------------------------------------------------------------------
printf '\n%-44s %10s %8s\n' IMAGE SIZE "BUILD S"
for target in "${WANT[@]}"; do
  tag=$(tag_of "$target")
  size=$(podman image inspect --format '{{.Size}}' "$tag")
  printf '%-44s %7d MB %8s\n' "$tag" "$((size / 1000000))" "${TOOK[$target]:-cached}"
done
if [[ -z "${BASE_IMAGE:-}" ]]; then
  size=$(podman image inspect --format '{{.Size}}' "$BASE")
  printf '%-44s %7d MB %8s\n' "$BASE" "$((size / 1000000))" "${TOOK[base]:-cached}"
fi
