#!/usr/bin/env bash
# System packages for the test cluster's real node (`hack/testenv up --cluster --real-node`,
# hack/testenv_realnode.py; the `realnode` tests, TRAINJOB_REAL_NODE=1): Debian's containerd 1.6
# (with runc, which setup-containers.sh installs for podman), the CNI plugins (bridge, host-local,
# loopback) and ip(8). Only that tier needs them: scripts/test.sh does not run this.
# Idempotent: installs only what is missing. Needs root (the node makes a bridge and mounts);
# without apt-get or root it says what to install and exits 0 (the tests then skip, saying why).
set -euo pipefail

say() { printf '==> %s\n' "$*"; }

PACKAGES=(containerd runc containernetworking-plugins iproute2)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  say "real-node packages present: $(containerd --version 2>/dev/null)"
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1 || [ "$(id -u)" -ne 0 ]; then
  say "the real node needs root and: apt-get install -y ${missing[*]}"
  exit 0
fi
say "installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get -o DPkg::Lock::Timeout=300 update -qq
apt-get -o DPkg::Lock::Timeout=300 install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
say "installed: $(containerd --version 2>/dev/null)"
