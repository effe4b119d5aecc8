#!/usr/bin/env bash
# System packages for images and the container backend: podman with runc (crun refuses the
# hybrid cgroups of some kernels), netavark (per-job networks),
# and mmdebstrap (hack/build-images.sh makes its Debian base with it).
# Idempotent: installs only what is missing. Needs root or sudo for apt-get; without apt-get, or
# without root, it says what to install and exits 0 (the container tests then skip, saying why).
set -euo pipefail

say() { printf '==> %s\n' "$*"; }

PACKAGES=(podman runc mmdebstrap uidmap netavark aardvark-dns containernetworking-plugins slirp4netns fuse-overlayfs)

missing=()
if command -v dpkg-query >/dev/null 2>&1; then
  for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
elif ! command -v podman >/dev/null 2>&1; then
  missing=("${PACKAGES[@]}")
fi

if [ ${#missing[@]} -eq 0 ]; then
  say "podman present: $(podman --version 2>/dev/null)"
  exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
  say "no apt-get here: install podman (with runc) and mmdebstrap yourself for images and the container backend"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
    say "not root and no sudo: run as root: apt-get install -y ${missing[*]}"
    exit 0
  fi
fi

say "installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get -o DPkg::Lock::Timeout=300 update -qq
$SUDO apt-get -o DPkg::Lock::Timeout=300 install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
say "podman installed: $(podman --version 2>/dev/null)"
