#!/usr/bin/env bash
# System packages the local backend needs for MPI runtimes: OpenMPI (mpirun) and its headers.
# Idempotent: installs only what is missing. Needs root or sudo for apt-get; on a machine
# without apt-get it says what to install and exits 0 (torch runtimes work without MPI).
set -euo pipefail

say() { printf '==> %s\n' "$*"; }

have_openmpi() {
  command -v mpirun >/dev/null 2>&1 || return 1
  if command -v dpkg >/dev/null 2>&1; then dpkg -s libopenmpi-dev >/dev/null 2>&1 || return 1; fi
}

if have_openmpi; then
  say "OpenMPI present: $(mpirun --version 2>/dev/null | head -n 1)"
  exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
  say "no apt-get here: install OpenMPI yourself for MPI runtimes (e.g. brew install open-mpi)"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
    say "not root and no sudo: run as root: apt-get install -y openmpi-bin libopenmpi-dev"
    exit 0
  fi
fi

say "installing OpenMPI (openmpi-bin libopenmpi-dev)"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends openmpi-bin libopenmpi-dev >/dev/null
say "OpenMPI installed: $(mpirun --version 2>/dev/null | head -n 1)"
