#!/usr/bin/env bash
# Measure a cold build of trainjob's images, as a fresh CI machine makes them: hack/build-images.sh
# into an empty podman store (its own graphroot), with an empty buildah cache (pip's cache mount),
# a fresh base made by mmdebstrap and a fresh context copy, then prints the wall and CPU seconds
# of each target and of the whole, and removes everything it made. The usual store, its images
# and their caches are not touched (nothing of theirs is reused either).
#
#   hack/cold-images.sh [TARGET...]      default: what scripts/test.sh builds (all four)
#
# Needs ~10 GB free under ${COLD_DIR:-/var/tmp/trainjob-cold-images} for the four images.
set -euo pipefail

REPO="$(cd "$(dirname "$0")/.." && pwd)"
DIR="${COLD_DIR:-/var/tmp/trainjob-cold-images}"
[[ ! -e "$DIR" ]] || { echo "cold-images: $DIR exists (another run?); remove it first" >&2; exit 1; }
mkdir -p "$DIR/storage" "$DIR/run" "$DIR/tmp" "$DIR/cache"
cat >"$DIR/storage.conf" <<EOF
[storage]
driver = "overlay"
graphroot = "$DIR/storage"
runroot = "$DIR/run"
EOF
export CONTAINERS_STORAGE_CONF="$DIR/storage.conf" TMPDIR="$DIR/tmp" TRAINJOB_CACHE="$DIR/cache"
[[ "$(podman info --format '{{.Store.GraphRoot}}')" == "$DIR/storage" ]] \
  || { echo "cold-images: podman ignores CONTAINERS_STORAGE_CONF; not touching its store" >&2; exit 1; }
cleanup() {
  # (not `podman system reset`: it would also remove every podman network, others' included)
  if [[ "$(podman info --format '{{.Store.GraphRoot}}' 2>/dev/null)" == "$DIR/storage" ]]; then
    podman rmi --all --force >/dev/null 2>&1 || true
  fi
  rm -rf "$DIR"
}
trap cleanup EXIT

targets=("$@")
[[ ${#targets[@]} -gt 0 ]] || targets=(controller initializer torch-trainer llm-trainer)
printf '%-18s %8s %8s\n' STEP "WALL S" "CPU S"
total_wall=0 total_cpu=0
# The base first, alone (build-images.sh makes it before any target), then each target in the
# order scripts/test.sh asks for them, each reusing the layers of those before, as in CI.
for step in base "${targets[@]}"; do
  arg=("$step")
  [[ "$step" != base ]] || arg=(--base-only)
  t0=$(date +%s.%N)
  cpu0=$(awk '{print $14+$15+$16+$17}' /proc/$$/stat)
  ( bash "$REPO/hack/build-images.sh" "${arg[@]}" >"$DIR/$step.log" 2>&1 ) || {
    tail -30 "$DIR/$step.log"; echo "cold-images: $step failed" >&2; exit 1; }
  wall=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.0f", b - a }')
  ticks=$(getconf CLK_TCK)
  cpu=$(awk -v a="$cpu0" -v t="$ticks" '{ printf "%.0f", ($14+$15+$16+$17 - a) / t }' /proc/$$/stat)
  printf '%-18s %8s %8s\n' "$step" "$wall" "$cpu"
  total_wall=$((total_wall + wall)) total_cpu=$((total_cpu + cpu))
done
printf '%-18s %8s %8s\n' total "$total_wall" "$total_cpu"
podman images --format '{{.Repository}}:{{.Tag}} {{.Size}}' | grep -v '<none>' || true
