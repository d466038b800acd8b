#!/usr/bin/env bash
# Issue #36 (the large cases at ci on aliased device memory) on one H200, from the repository root:
#   OUT=/some/dir bash tools/gpu_check_issue36.sh
# Each step prints PASS or FAIL; its log is $OUT/<step>.log. About 3 minutes on one H200.
#   tests      tests/test_large_gpu.py (the mapping read back, torch over it, the twin and the offset defects at
#              ci) and the CPU tests of the plans and of the launch body on the fake driver
#   kernels    the bundled main job, cold (fresh verifier and Triton caches), timed: `verifier check kernels/ -j auto
#              --level ci` (issue #36: at most 45 s, no finding on a correct kernel)
#   large      benchmarks/large_cases_ci_time.py: the four large cases per kernel and dtype (at most 1.5 s)
#   detection  the defects of kernels/defects that only a GPU shows (past 2^32, a stride >= 2^31) and their twin at
#              ci: JSON for kernels/defects/results/detection-gpu-large36.json (then re-render the matrix:
#              tests/test_defects_table.py says the command)
set -uo pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
PY="${PYTHON:-python3}"
OUTDIR="${OUT:-/tmp/gpu_check_issue36}"
mkdir -p "$OUTDIR"
FAILED=0
LARGE_DEFECTS=(defect-cuda-rmsnorm-unsigned-row-offset defect-cuda-rmsnorm-int32-row-stride)

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

kernels() {
  local t0 t1
  t0=$(date +%s.%N)
  VERIFIER_CACHE_DIR=$(mktemp -d) TRITON_CACHE_DIR=$(mktemp -d) "$PY" -m verifier.cli check kernels/ -j auto \
    --level ci --format json --no-progress > "$OUTDIR/kernels_ci.json"
  t1=$(date +%s.%N)
  "$PY" - "$OUTDIR/kernels_ci.json" "$t0" "$t1" <<'PYEOF'
import json, sys
from collections import Counter
d = json.load(open(sys.argv[1]))
wall = float(sys.argv[3]) - float(sys.argv[2])
ks = d["kernels"]
print(f"cold wall {wall:.1f} s; verdicts {dict(Counter(k['verdict'] for k in ks))}")
bad = [k for k in ks if k["verdict"] not in ("pass", "skipped") or k.get("findings")]
for k in bad:
    print(k["name"], k["verdict"], [(f.get("check"), f.get("message", "")[:200]) for f in k.get("findings", [])][:3])
sys.exit(1 if bad or wall > 45 else 0)
PYEOF
}

detection() {
  local args=()
  for d in "${LARGE_DEFECTS[@]}"; do args+=(--defect "$d"); done
  "$PY" tools/detection_table.py run --device cuda --level ci "${args[@]}" \
    --out "$OUTDIR/detection-gpu-large36.json" || return 1
  "$PY" - "$OUTDIR/detection-gpu-large36.json" <<'PYEOF'
import json, sys
r = json.load(open(sys.argv[1]))
bad = []
for name, d in sorted(r["defects"].items()):
    print(f"defect {name}: caught={d.get('caught')} classes={d.get('classes')} {d.get('skipped', '')}")
    bad += [] if d.get("caught") else [name]
for name, t in sorted(r["twins"].items()):
    print(f"twin {name}: {t['verdict']} {t.get('classes')} {t.get('error') or ''}")
    bad += [] if t["verdict"] == "pass" else [name]
sys.exit(f"not as declared: {bad}" if bad else 0)
PYEOF
}

step kernels kernels
step tests "$PY" -m pytest -q -p no:randomly -p no:cacheprovider tests/test_large_gpu.py tests/test_aliasing.py \
  tests/test_layouts.py -rs
step large "$PY" benchmarks/large_cases_ci_time.py --out "$OUTDIR/large_cases_ci_time.json"
step detection detection
if [ "$FAILED" = 0 ]; then echo "gpu_check_issue36: PASS (every step)"; else echo "gpu_check_issue36: FAIL"; fi
exit "$FAILED"
