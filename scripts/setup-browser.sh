#!/usr/bin/env bash
# The browser the dashboard's browser tests drive (tests/e2e/test_dashboard_browser.py): Debian's
# chromium, headless, through Playwright pointed at /usr/bin/chromium (Playwright downloads no
# browser of its own). Idempotent: installs only what is missing. Without apt-get or root it says
# what to install and exits 0 (those tests then skip, saying why).
set -euo pipefail

say() { printf '==> %s\n' "$*"; }

if command -v chromium >/dev/null 2>&1; then
  say "chromium present: $(chromium --version 2>/dev/null | head -n 1)"
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
  say "no apt-get here: install Chromium yourself for the dashboard's browser tests"
  exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
    say "not root and no sudo: run as root: apt-get install -y chromium fonts-dejavu-core"
    exit 0
  fi
fi
say "installing chromium (the dashboard's browser tests)"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null
say "chromium installed: $(chromium --version 2>/dev/null | head -n 1)"
