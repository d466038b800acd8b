#!/usr/bin/env bash
# Issue #23, the static-lint half, on a CUDA machine (from the repository root; runs the package from source):
#   OUT=/some/dir bash tools/gpu_check_lint23.sh
# Each step prints PASS or FAIL; the script stops at the first FAIL. Logs: $OUT/<step>.log when OUT is set.
#   lint-tests  the lint tests with this machine's nvcc (PTX of every repository kernel read whole, the warp cases);
#               only FlashInfer's test may skip (flashinfer-python not installed)
#   cub         verifier check kernels/third_party/cub (quick) on the GPU: our cub::BlockReduce / cub::WarpReduce
#               kernels, values included; every kernel must pass
#   warp-twins  the warp-per-row RMSNorm twins of kernels/defects/cuda/warp_sync_defects.cu (quick, values
#               included, the two of issue #23 finding 2 among them): every one must pass
#   racecheck   compute-sanitizer racecheck and synccheck on those twins and the cub kernels: no record may
#               come back (the lint clears them; racecheck must agree). The three warp defects run too, and what
#               racecheck says of them is printed (information: the lint is their declared class)
#   matrix      the detection matrix's tests for the new entries on the GPU (defects caught, twins whole battery)
set -euo pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
PY="${PYTHON:-python3}"
V="$PY -m verifier.cli"
TMP="${OUT:-/tmp/gpu_check_lint23}"
mkdir -p "$TMP"
DEFECTS=kernels/defects/cuda/defects.py

step() {  # step NAME CMD...: CMD's output to the terminal and to $OUT/NAME.log, then PASS/FAIL NAME
  local name=$1; shift
  echo "== $name: $*"
  local rc=0
  if [ -n "${OUT:-}" ]; then "$@" 2>&1 | tee "$OUT/$name.log" || rc=$?; else "$@" 2>&1 || rc=$?; fi
  if [ "$rc" -eq 0 ]; then echo "PASS $name"; else echo "FAIL $name (exit $rc)"; exit 1; fi
}

lint_tests() {
  "$PY" -m pytest -q -p no:randomly -p no:cacheprovider tests/test_lint_ptx.py tests/test_lint_warpsync.py \
    tests/test_lint_checks.py tests/test_lint_cli.py -rs | tee "$TMP/lint_tests.txt"
  local rc=${PIPESTATUS[0]}  # a failed test fails the step (the grep below decides only the skips)
  if grep -E "^SKIPPED" "$TMP/lint_tests.txt" | grep -qv "flashinfer"; then
    echo "lint-tests: a test skipped (above) other than FlashInfer's" >&2; return 1
  fi
  return "$rc"
}

sanitize_ok() {  # no record for the twins and the cub kernels; the defects' records printed
  local rc=0
  $V sanitize "$DEFECTS" kernels/third_party/cub --kernel 'cuda-rmsnorm-warp-*' --kernel 'defect-warp-*' \
    --kernel 'cub-*' --tool racecheck --tool synccheck --jobs 4 --format json --output "$TMP/sanitize.json" \
    --keep-xml "$TMP/xml" || rc=$?
  [ "$rc" -le 1 ] || { echo "sanitize exited $rc" >&2; return 1; }
  "$PY" - "$TMP/sanitize.json" <<'EOF'
import json, sys
doc = json.load(open(sys.argv[1]))
bad = []
for k in doc["kernels"]:
    msgs = [f["check"] + ": " + f["message"].splitlines()[0] for f in k["findings"]]
    defect = k["name"].startswith("defect-")
    print(("INFO " if defect else "OK   " if not msgs else "BAD  ") + k["name"], k["verdict"], msgs[:3] or "no record")
    if not defect and (msgs or k["verdict"] != "pass"):
        bad.append(k["name"])
sys.exit(f"sanitizer records on kernels the lint clears: {bad}" if bad else 0)
EOF
}

step lint-tests lint_tests
step cub $V check kernels/third_party/cub --level quick --device cuda --no-progress
step warp-twins $V check "$DEFECTS" --kernel 'cuda-rmsnorm-warp-*' --level quick --device cuda --no-progress
step racecheck sanitize_ok
step matrix "$PY" -m pytest -q -p no:randomly -p no:cacheprovider suites/test_detection_matrix.py \
  -k "rmsnorm-warp or defect-warp-" -rs
echo "gpu_check_lint23: every step passed"
