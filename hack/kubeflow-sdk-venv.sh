#!/usr/bin/env bash
# A virtual environment with the real Kubeflow SDK (`kubeflow` from PyPI), cached by version
# outside the repo, for tests/cluster/test_kubeflow_sdk.py: upstream's SDK as a client of
# trainjob's controller. Prints the environment's python.
#
#   hack/kubeflow-sdk-venv.sh            make it (skipped when it is there), print its python
#
# Layout: $TRAINJOB_CACHE/kubeflow-sdk/kubeflow-$KUBEFLOW_SDK_VERSION/ (TRAINJOB_CACHE default
# ~/.cache/trainjob); made with uv (pip when uv is missing) from PyPI, then marked complete, so
# an interrupted install is made again. Cold: ~10-30 s (kubeflow, kubernetes, pydantic, ...).
#
# Env overrides: KUBEFLOW_SDK_VERSION (0.5.0), TRAINJOB_CACHE, PYTHON (python3).
set -euo pipefail

KUBEFLOW_SDK_VERSION="${KUBEFLOW_SDK_VERSION:-0.5.0}"
CACHE_ROOT="${TRAINJOB_CACHE:-$HOME/.cache/trainjob}"
OUT="$CACHE_ROOT/kubeflow-sdk/kubeflow-$KUBEFLOW_SDK_VERSION"
PY="${PYTHON:-python3}"
mkdir -p "$(dirname "$OUT")"

if [[ -f "$OUT/.complete" ]]; then echo "$OUT/bin/python"; exit 0; fi
if command -v flock >/dev/null; then
  exec 9>"$OUT.lock"
  flock 9
  if [[ -f "$OUT/.complete" ]]; then echo "$OUT/bin/python"; exit 0; fi
fi
t0=$(date +%s)
rm -rf "$OUT"
log="$(mktemp)"
if command -v uv >/dev/null; then
  uv venv -q --python "$PY" "$OUT" >"$log" 2>&1 && uv pip install -q -p "$OUT/bin/python" "kubeflow==$KUBEFLOW_SDK_VERSION" >>"$log" 2>&1 || {
    echo "kubeflow-sdk-venv: installing kubeflow==$KUBEFLOW_SDK_VERSION failed:" >&2; cat "$log" >&2; rm -f "$log"; exit 1; }
else
  "$PY" -m venv "$OUT" >"$log" 2>&1 && "$OUT/bin/python" -m pip install -q "kubeflow==$KUBEFLOW_SDK_VERSION" >>"$log" 2>&1 || {
    echo "kubeflow-sdk-venv: installing kubeflow==$KUBEFLOW_SDK_VERSION failed:" >&2; cat "$log" >&2; rm -f "$log"; exit 1; }
fi
rm -f "$log"
touch "$OUT/.complete"
echo "kubeflow-sdk-venv: kubeflow $KUBEFLOW_SDK_VERSION in $OUT in $(( $(date +%s) - t0 ))s" >&2
echo "$OUT/bin/python"
