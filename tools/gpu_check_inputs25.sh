#!/usr/bin/env bash
# Issue #25 (inputs real callers pass) on one H200, from the repository root; the package may be installed or not
# (this runs it from source):
#   OUT=/some/dir bash tools/gpu_check_inputs25.sh
# Each step prints PASS or FAIL; its log is $OUT/<step>.log when OUT is set. Under 4 minutes on one H200.
#   tests      the CPU tests of the layouts (fake libcuda) in this environment
#   layouts    every bundled kernel (CUDA, compiled Triton, torch) on the strided, unaligned and log-domain cases
#              through the pytest suites on the GPU: nothing may fail; the skips are the declared contracts and
#              the CUDA launches that pass no row stride
#   large      the large-index case (more than 2^31 elements) on a CUDA norm, softmax and Triton norm: each within
#              30 s and passing (benchmarks/large_index_time.py: time, memory and phases for docs/benchmarks.md)
#   detection  the new defects of kernels/defects (class by class: caught; their twins: pass) and whether
#              assert_close on randn catches the numeric ones: JSON for kernels/defects/results/
set -euo pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
PY="${PYTHON:-python3}"
OUTDIR="${OUT:-/tmp/gpu_check_inputs25}"
mkdir -p "$OUTDIR"
FAILED=0
NEW_GPU_DEFECTS=(defect-cuda-rmsnorm-int32-row-offset defect-cuda-rmsnorm-ignores-row-stride
                 defect-cuda-fused-add-rmsnorm-vec-unaligned defect-cuda-ce-neg-log-softmax
                 defect-triton-rmsnorm-int32-row-offset)

step() {  # step NAME CMD...: runs CMD, its output to the terminal and to $OUTDIR/NAME.log; PASS / FAIL line
  local name=$1; shift
  echo "== $name: $*"
  local t0=$SECONDS
  if "$@" 2>&1 | tee "$OUTDIR/$name.log"; then
    echo "PASS $name ($((SECONDS - t0)) s)"
  else
    echo "FAIL $name ($((SECONDS - t0)) s): see $OUTDIR/$name.log"; FAILED=1
  fi
}

layouts() {
  "$PY" -m pytest -q -p no:randomly -p no:cacheprovider suites/test_ops.py --verifier-device cuda -n 16 -rs \
    -k "strided_rows_pad64 or unaligned_1elem_past_16bytes or ls_wide or ls_one or ce_wide or ce_one or ce_label_at_min" \
    | tee "$OUTDIR/layouts_pytest.txt"
  local rc=${PIPESTATUS[0]}
  echo "skip reasons (count):"
  grep -E "^SKIPPED" "$OUTDIR/layouts_pytest.txt" | sed -E 's/^SKIPPED \[[0-9]+\] [^:]+:[0-9]+: //; s/case [a-z0-9_]+ //' \
    | sort | uniq -c | sort -rn
  return "$rc"
}

large() {
  "$PY" benchmarks/large_index_time.py --out "$OUTDIR/large_index_time.json" \
    --kernel kernels/cuda/rmsnorm_spec.py:cuda-rmsnorm-n2:bf16 --kernel kernels/cuda/rmsnorm_spec.py:cuda-rmsnorm-n2:f32 \
    --kernel kernels/cuda/softmax_spec.py:cuda-softmax-s2:bf16 --kernel kernels/triton/spec.py:triton-rmsnorm:bf16 \
    --phases cuda-rmsnorm-n2
}

detection() {
  local args=()
  for d in "${NEW_GPU_DEFECTS[@]}"; do args+=(--defect "$d"); done
  "$PY" tools/detection_table.py run --device cuda --level quick "${args[@]}" \
    --out "$OUTDIR/detection-gpu-inputs.json" || return 1
  "$PY" tools/assert_close_matrix.py --device cuda --defect defect-cuda-rmsnorm-ignores-row-stride \
    --defect defect-cuda-ce-neg-log-softmax --out "$OUTDIR/assert-close-gpu-inputs.json" || return 1
  "$PY" - "$OUTDIR/detection-gpu-inputs.json" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
bad = []
for name, d in sorted(r["defects"].items()):
    print(f"defect {name}: caught={d.get('caught')} classes={d.get('classes')} {d.get('skipped', '')}")
    if not d.get("caught"):
        bad.append(name)
for name, t in sorted(r["twins"].items()):
    print(f"twin {name}: {t['verdict']} {t.get('classes')} {t.get('error') or ''}")
    if t["verdict"] != "pass":
        bad.append(name)
sys.exit(f"not as declared: {bad}" if bad else 0)
EOF
}

step tests "$PY" -m pytest -q -p no:randomly -p no:cacheprovider tests/test_layouts.py tests/test_launch_path.py
step layouts layouts
step large large
step detection detection
if [ "$FAILED" = 0 ]; then echo "gpu_check_inputs25: PASS (every step)"; else echo "gpu_check_inputs25: FAIL"; fi
exit "$FAILED"
