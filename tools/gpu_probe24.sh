#!/usr/bin/env bash
# Issue #24 probes on one CUDA machine (not a check: measurements to decide what to change), from the repo root:
#   OUT=/some/dir bash tools/gpu_probe24.sh [STEP...]   steps: env tune profile jobs (default: all)
#   env      versions; python -X importtime of torch and triton (top entries)
#   tune     benchmarks/layernorm_tune.py (bf16, f16, f32; 8192 x {1024, 2048, 4096, 8192})
#   profile  benchmarks/profile_check.py, quick, in this process: triton-softmax and torch-softmax, cold then warm
#   jobs     verifier check kernels/ --level ci -j auto, cold then warm: wall and each kernel's seconds and kind
set -uo pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
PY="${PYTHON:-python3}"
W=${WORK:-/tmp/probe24}
LOGS=${OUT:-$W/logs}
mkdir -p "$W" "$LOGS"
steps=${*:-env tune profile jobs}
has() { case " $steps " in *" $1 "*) return 0;; esac; return 1; }
whl=$(ls .whl/liger_kernel-*.whl 2>/dev/null | head -1 || true)
[ -n "$whl" ] && "$PY" -m pip install -q --no-deps --target "$W/liger" "$whl" && export PYTHONPATH="$PYTHONPATH:$W/liger"
export VERIFIER_CACHE_DIR=$W/cache TRITON_CACHE_DIR=$W/cache/triton
if has env; then
  { date -u +%FT%TZ; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc
    "$PY" -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__)'
    for m in torch triton verifier.isolation.child; do
      /usr/bin/time -f "%e s wall, %U user, %S sys: import $m" "$PY" -c "import $m"
      /usr/bin/time -f "%e s wall (again): import $m" "$PY" -c "import $m"
    done
    "$PY" -X importtime -c 'import torch' 2> "$W/it.txt"; sort -t'|' -k2 -n "$W/it.txt" | tail -25
    "$PY" -X importtime -c 'import torch, triton' 2> "$W/it2.txt"; sort -t'|' -k1 -n "$W/it2.txt" | tail -25
  } > "$LOGS/env.log" 2>&1
fi
has tune && "$PY" benchmarks/layernorm_tune.py > "$LOGS/tune.log" 2>&1
if has profile; then
  for t in kernels/triton/spec.py:triton-softmax kernels/torch/spec.py:torch-softmax kernels/triton/spec.py:triton-rmsnorm; do
    for pass in cold warm; do
      echo "=== $t $pass"; "$PY" benchmarks/profile_check.py "${t%%:*}" "${t##*:}" --level quick --device cuda --top 70
    done
  done > "$LOGS/profile.log" 2>&1
  for t in kernels/triton/spec.py:triton-softmax kernels/torch/spec.py:torch-softmax; do
    /usr/bin/time -f "%e s wall: verifier check $t quick" "$PY" -m verifier.cli check "${t%%:*}" --kernel "${t##*:}" \
      --level quick --no-progress > /dev/null
  done >> "$LOGS/profile.log" 2>&1
fi
if has jobs; then
  rm -rf "$W/cache"
  for tag in cold warm warm-omp1; do
    case $tag in *omp1) export OMP_NUM_THREADS=1;; esac
    /usr/bin/time -f "check -j auto $tag: exit %x, wall %e s, user %U s, sys %S s" -o "$W/t_$tag" \
      "$PY" -m verifier.cli check kernels/ --level ci -j auto --format json --output "$W/j_$tag.json" 2> "$W/j_$tag.err"
    cat "$W/t_$tag"; tail -2 "$W/j_$tag.err"
    "$PY" - "$W/j_$tag.json" <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1]))
ks = sorted(d["kernels"], key=lambda k: -(k.get("seconds") or 0))
tot = {}
for k in ks:
    tot[k["kind"]] = tot.get(k["kind"], 0) + (k.get("seconds") or 0)
print("sum of kernel seconds by kind:", {k: round(v, 1) for k, v in tot.items()}, "total", round(sum(tot.values()), 1))
print(" ".join(f"{k['name']}:{k['kind'][0]}:{(k.get('seconds') or 0):.1f}" for k in ks))
PYEOF
  done > "$LOGS/jobs.log" 2>&1; unset OMP_NUM_THREADS
  uptime >> "$LOGS/jobs.log"
fi
echo done
