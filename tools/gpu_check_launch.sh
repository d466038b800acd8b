#!/usr/bin/env bash
# The one CUDA launch path (issue #22) on a CUDA machine, from the repository root; the package may be installed
# or not (this runs it from source):
#   OUT=/some/dir bash tools/gpu_check_launch.sh
# Stops at the first failing step; each step's log is $OUT/<step>.log when OUT is set (else only the terminal).
#   tests     the GPU tests of the launch path (and its CPU tests, with their fakes) with skip reasons: nothing may
#             skip for want of a GPU here
#   check     verifier check kernels/cuda at quick: every bundled CUDA kernel through the check child
#   bench     verifier bench of two CUDA kernels (one with a workspace and two launches) on torch's stream
#   sanitize  memcheck and initcheck through the sanitizer's child, which now runs CUDA kernels on driver buffers
#   plugin    the pytest plugin's process (torch imported) on two CUDA kernels
set -euo pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
PY="${PYTHON:-python3}"
V="$PY -m verifier.cli"
if [ -n "${OUT:-}" ]; then mkdir -p "$OUT"; fi

step() {  # step NAME CMD...: runs CMD, its output to the terminal and to $OUT/NAME.log
  local name=$1; shift
  echo "== $name: $*"
  if [ -n "${OUT:-}" ]; then "$@" 2>&1 | tee "$OUT/$name.log"; else "$@" 2>&1; fi
}

no_gpu_skips() {  # the GPU tests must have run: a skip for want of a GPU, driver, nvcc or CUDA torch fails
  "$PY" -m pytest -q -p no:randomly -p no:cacheprovider tests/test_launch_path_gpu.py tests/test_cuda_driver.py \
    tests/test_cuda_stream_interop.py tests/test_launch_path.py -rs | tee /tmp/gpu_check_launch_tests.txt
  if grep -qE "^SKIPPED" /tmp/gpu_check_launch_tests.txt; then echo "gpu_check_launch: tests skipped (above)" >&2; return 1; fi
}

bench_ok() {  # every timed row ok or refused by design; an 'error' row is a failed launch
  $V bench kernels/cuda/softmax_fast_spec.py --kernel cuda-softmax-s5 --kernel cuda-softmax-split --dtype bf16 \
    --shape 8192x4096 --shape 32x152064 --runs 20 --format json --output /tmp/gpu_check_launch_bench.json
  "$PY" -c '
import json, sys
rows = json.load(open("/tmp/gpu_check_launch_bench.json"))["rows"]
for r in rows:
    print(r["kernel"], r["dtype"], r["M"], r["N"], r["status"], r.get("median_ms"), r.get("note") or "")
bad = [r for r in rows if r["status"] not in ("ok", "refused")]
ok = [r for r in rows if r["status"] == "ok" and r["kernel"] != "d2d-copy"]
sys.exit(f"bench: {len(bad)} rows in error" if bad else 0 if ok else "bench: no kernel row timed")'
}

step tests no_gpu_skips
step check $V check kernels/cuda --budget quick --device cuda --no-progress
step bench bench_ok
step sanitize $V sanitize kernels/cuda/softmax_fast_spec.py --kernel cuda-softmax-s5 --kernel cuda-softmax-split \
  --dtype bf16 --tool memcheck --tool initcheck
step plugin "$PY" -m pytest -q -p no:randomly -p no:cacheprovider suites/test_ops.py --verifier-device cuda \
  --verifier-kernels 'cuda-rmsnorm-n1,cuda-cross-entropy' -x
echo "gpu_check_launch: every step passed"
