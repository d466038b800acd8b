#!/usr/bin/env bash
# Issue #23 on a CUDA machine (an H200), from the repository root, with the package installed or not:
#   OUT=/some/dir bash tools/gpu_check_world23.sh
# Each step prints "PASS <step>" or "FAIL <step>" and logs to $OUT/<step>.log when OUT is set; the script stops at
# the first failing step.
#
# Third-party packages (no network there): put these in .whl/ first (commands in kernels/third_party/README.md):
#   .whl/liger_kernel-0.8.5-py3-none-any.whl             (910 kB, pure Python; installed --no-deps into a scratch dir)
#   .whl/flashinfer-0.7.4-include/flashinfer/data/include (7.3 MB: the headers of flashinfer_python-0.7.4's wheel,
#                                                          unzipped; the 101 MB wheel itself also works if carried)
# Steps:
#   setup     install those into a scratch site dir (PYTHONPATH), nothing into the machine's environment
#   tests     tests/test_third_party_gpu.py (library-wrapped Triton kernel's resources through Triton's hooks, a
#             real shared-memory OutOfResources as a refusal, a launcher launching nothing as that kernel's error, a
#             templated CUDA kernel by C++ name writing y over x): nothing may skip
#   check     verifier check kernels/third_party --device cuda --level ci, one process per kernel in parallel: no
#             internal error, no error finding, every kernel checked (values included)
#   sanitize  memcheck, racecheck, initcheck, synccheck on every third-party kernel (Liger's and FlashInfer's in
#             bf16, anything else in every dtype); started with the check step and waited for after it
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
WORK="${OUT:-/tmp/gpu_check_world23}"
mkdir -p "$WORK"
SITE="$WORK/site"
export PYTHONPATH="$PWD:$SITE${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
V="$PY -m verifier.cli"

step() {  # step NAME CMD...: runs CMD, output to the terminal and $WORK/NAME.log, then PASS/FAIL NAME
  local name=$1; shift
  echo "== $name: $*"
  if "$@" > >(tee "$WORK/$name.log") 2>&1; then echo "PASS $name"; else echo "FAIL $name (log: $WORK/$name.log)"; exit 1; fi
}

setup() {
  rm -rf "$SITE" && mkdir -p "$SITE"
  "$PY" -m pip install -q --no-deps --no-index --target "$SITE" .whl/liger_kernel-0.8.5-py3-none-any.whl
  if [ -f .whl/flashinfer_python-0.7.4-py3-none-any.whl ]; then
    "$PY" -m pip install -q --no-deps --no-index --target "$SITE" .whl/flashinfer_python-0.7.4-py3-none-any.whl
  else  # the headers alone: a namespace package `flashinfer` holding data/include
    cp -r .whl/flashinfer-0.7.4-include/flashinfer "$SITE/"
  fi
  "$PY" - <<'EOF'
import liger_kernel.ops.rms_norm  # noqa: F401 - imports on this torch / triton
from verifier.declare.packages import package_path
import os, sys
inc = package_path("flashinfer", "data", "include")
assert os.path.isfile(os.path.join(inc, "flashinfer", "norm.cuh")), inc
from verifier.declare.registry import find_spec_files, load_spec_file
missing = [(k.name, k.unavailable()) for f in find_spec_files(["kernels/third_party"]) for k in load_spec_file(f)
           if k.unavailable()]
sys.exit(f"third-party kernels still unavailable: {missing}" if missing else 0)
EOF
}

tests() {  # GPU tests must run: a skip for want of a GPU, nvcc or a package fails the step
  "$PY" -m pytest -q -p no:randomly -p no:cacheprovider -rs tests/test_third_party_gpu.py | tee "$WORK/tests.txt"
  local rc=${PIPESTATUS[0]}  # a failed test fails the step (the grep below decides only the skips)
  if grep -qE "^SKIPPED" "$WORK/tests.txt"; then echo "tests skipped (above)" >&2; return 1; fi
  return "$rc"
}

check() {  # one verifier check per kernel, in parallel (each isolates its kernel in a child as usual)
  local names pids=() rc=0
  names=$("$PY" -c '
from verifier.declare.registry import find_spec_files, load_spec_file
print(" ".join(k.name for f in find_spec_files(["kernels/third_party"]) for k in load_spec_file(f)))')
  for k in $names; do
    $V check kernels/third_party --kernel "$k" --device cuda --level ci --no-progress --verbose \
      --format json --output "$WORK/check-$k.json" > "$WORK/check-$k.txt" 2>&1 & pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || rc=$?; done
  for k in $names; do cat "$WORK/check-$k.txt"; done
  "$PY" - "$WORK" $names <<'EOF'
import json, sys
work, names = sys.argv[1], sys.argv[2:]
bad = []
for n in names:
    try:
        k = json.load(open(f"{work}/check-{n}.json"))["kernels"][0]
    except Exception as e:  # noqa: BLE001 - no report: the run died
        bad.append(f"{n}: no report ({e})"); continue
    errors = [f["message"].splitlines()[0] for f in k["findings"] if f["severity"] == "error"]
    skipped = {c: v for t, cs in k["checks"].items() for c, v in cs.items() if c == "value" and v.startswith("skip")}
    print(f"{n}: {k['verdict']}, {len(errors)} errors, {len(k['findings'])} findings, {k['seconds']} s")
    if k["verdict"] != "pass" or errors or skipped or k["error"]:
        bad.append(f"{n}: verdict {k['verdict']}, error {k['error']}, skipped value cells {skipped}, {errors[:3]}")
sys.exit("\n".join(bad) if bad else 0)
EOF
}

sanitize() {  # bf16 for Liger's and FlashInfer's kernels (each declares it); every dtype of anything else here
  local d rc=0
  for d in kernels/third_party/*/; do
    case "$d" in
      */liger/|*/flashinfer/) $V sanitize "$d" --dtype bf16 --jobs 12 || rc=$? ;;
      *) $V sanitize "$d" --jobs 12 || rc=$? ;;
    esac
  done
  return $rc
}

step setup setup
step tests tests
sanitize > "$WORK/sanitize.log" 2>&1 & SANITIZE=$!
step check check
echo "== sanitize (started with check): $V sanitize kernels/third_party/<each folder> --jobs 12"
if wait "$SANITIZE"; then cat "$WORK/sanitize.log"; echo "PASS sanitize"; else
  cat "$WORK/sanitize.log"; echo "FAIL sanitize (log: $WORK/sanitize.log)"; exit 1; fi
echo "gpu_check_world23: every step passed"
