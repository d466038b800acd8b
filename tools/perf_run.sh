#!/usr/bin/env bash
# Performance evidence on a CUDA machine (issue #15): what docs/benchmarks.md and docs/gpu-runs/ quote.
#   OUT=/dir VERIFIER_COMMIT=<commit> bash tools/perf_run.sh [STEP...]
#   steps: env tune bench check profile verdict sanitize matrix suites
#   TUNE_ARGS: arguments of benchmarks/softmax_tune.py; SUITES_WORKERS: worker counts swept one after another
#   (e.g. "16 8 4"; the first run also warms the build and Triton caches, which every later run shares)
# Liger-Kernel is used when importable (carry its wheel in .whl/ and install it with --target first).
# Logs go to a work folder, packed into $OUT/perf.tar.gz after every step.
set -u
FINAL=${OUT:-$PWD/perf-out}
W=${WORK:-/tmp/perf-run}
mkdir -p "$W" "$FINAL"
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
export VERIFIER_CACHE_DIR=${VERIFIER_CACHE_DIR:-/tmp/kv-cache}
steps=${*:-env tune bench check profile}
has() { case " $steps " in *" $1 "*) return 0;; esac; return 1; }
pack() { tar -czf "$FINAL/perf.tar.gz" -C "$(dirname "$W")" "$(basename "$W")"; }
V="python3 -m verifier.cli"
SOFTMAX="kernels/cuda/softmax_spec.py kernels/cuda/softmax_fast_spec.py"

if has env; then
  { echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"; echo "commit: ${VERIFIER_COMMIT:-?}"
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv,noheader
    nvcc --version | tail -1; nproc
    python3 -c 'import torch,triton;print("torch",torch.__version__,"triton",triton.__version__)'
    python3 -c 'import liger_kernel,importlib.metadata as m;print("liger-kernel",m.version("liger-kernel"))' 2>&1 | tail -1
  } > "$W/env.txt" 2>&1; cat "$W/env.txt"
fi
if has startup; then
  # the fixed costs of a verdict, each on its own
  { t() { local s=$(date +%s.%N); "$@" > /dev/null 2>&1; echo "$(python3 -c "print(f'{$(date +%s.%N)-$s:6.2f}')") s  $*"; }
    t python3 -c pass
    t python3 -c 'import torch'
    t python3 -c 'import torch; torch.cuda.is_available()'
    t python3 -c 'import torch; torch.zeros(1, device="cuda")'
    t python3 -c 'import numpy, mpmath, hypothesis'
    t python3 -c 'import verifier.cli'
    t python3 -c 'import verifier.battery'
    t python3 -c 'import verifier.isolation.child'
    t python3 -c 'from verifier.gpu import libcuda, probe; libcuda.context(); print(probe.device_arch())'
    t python3 -m verifier.cli --help
    t nvidia-smi --query-gpu=driver_version --format=csv,noheader
    t nvcc --version
    t compute-sanitizer --version
    t python3 -m verifier.cli list kernels/cuda/rmsnorm_spec.py
  } | tee "$W/startup.txt"
fi
if has tune; then
  python3 benchmarks/softmax_tune.py ${TUNE_ARGS:-} > "$W/tune.txt" 2>&1; grep -E "^best|^#|Error|error" "$W/tune.txt"
fi; pack
if has bench; then
  t0=$(date +%s)
  $V bench $SOFTMAX --kernel 'cuda-softmax-s[45]' --kernel 'cuda-softmax-s5f' --kernel 'cuda-softmax-split' --kernel 'cuda-softmax-cluster' --against kernels/torch \
     --against benchmarks/liger_spec.py --dtype f32 --dtype bf16 --format json --output "$W/bench_softmax.json" \
     --plot "$W/bench_softmax.png" 2> "$W/bench_softmax.err"; echo "exit $? wall $(( $(date +%s) - t0 )) s" >> "$W/bench_softmax.err"
  python3 -c "
import json,sys
from verifier.bench import plan, markdown, text
d=json.load(open('$W/bench_softmax.json'))
for r in d['rows']:
    if r['status']=='ok': print(f\"{r['kernel']:22s} {r['dtype']:5s} {r['M']:>5d}x{r['N']:<7d} {r['median_ms']*1e3:8.1f}us {r['gbs']:7.0f} GB/s x{r['ratio_to_copy']:.3f}\")
    else: print(f\"{r['kernel']:22s} {r['dtype']:5s} {r['M']:>5d}x{r['N']:<7d} {r['status']}: {r['note'][:80]}\")
"; tail -3 "$W/bench_softmax.err"
  $V bench kernels/cuda/rmsnorm_spec.py --kernel 'cuda-rmsnorm-n4' --against kernels/torch --dtype bf16 \
     --shape 8192x3584 --format markdown --output "$W/bench_rmsnorm.md" 2> "$W/bench_rmsnorm.err"; tail -4 "$W/bench_rmsnorm.md"
fi; pack
if has check; then
  t0=$(date +%s)
  $V check kernels/cuda/softmax_fast_spec.py --level ci --format json --output "$W/check_fast.json" --no-progress \
     2> "$W/check_fast.err"; echo "exit $? wall $(( $(date +%s) - t0 )) s" >> "$W/check_fast.err"; tail -3 "$W/check_fast.err"
fi; pack
if has profile; then
  python3 -X importtime -c 'import verifier.cli, verifier.battery' 2> "$W/importtime.txt"
  sort -t'|' -k2 -n -r "$W/importtime.txt" | head -15
  for torch in no-torch import-torch; do  # one launch path; the second run imports torch first (as the plugin's process)
    python3 benchmarks/profile_check.py kernels/cuda/rmsnorm_spec.py cuda-rmsnorm-n3 --level quick --device cuda \
       $([ $torch = import-torch ] && echo --import-torch) > "$W/profile_quick_$torch.txt" 2>&1
    head -60 "$W/profile_quick_$torch.txt" | cut -c1-160
  done
fi; pack
if has verdict; then
  # one CUDA kernel, 3 dtypes, through the one CUDA launch path (benchmarks/verdict_time.py):
  # cold quick, warm quick, ci, thorough, thorough --sanitize, and the phases of one warm quick run
  python3 benchmarks/verdict_time.py --spec kernels/cuda/rmsnorm_spec.py --kernel cuda-rmsnorm-n3 --out "$W/verdict" \
     > "$W/verdict.txt" 2> "$W/verdict.err"; echo "exit $?" >> "$W/verdict.err"; cat "$W/verdict.txt"; tail -5 "$W/verdict.err"
fi; pack
if has sanitize; then
  for tool in racecheck memcheck synccheck initcheck; do
    s=$(date +%s); $V sanitize kernels/cuda/softmax_fast_spec.py --tool $tool --format json --jobs 4 \
      --output "$W/sanitize_$tool.json" 2> "$W/sanitize_$tool.err"; rc=$?
    echo "sanitize $tool exit=$rc wall=$(( $(date +%s) - s )) s" | tee -a "$W/sanitize.txt"; tail -1 "$W/sanitize_$tool.err"
  done
fi; pack
if has matrix; then
  # the detection matrix alone, one line per test with its worker, and the slowest tests; pytest-timeout (in the
  # device image) fails a test that hangs past MATRIX_TEST_TIMEOUT instead of letting it hold the run
  PLUGIN=""; python3 -c 'import importlib.metadata as m; m.version("kernel-verifier")' 2>/dev/null || PLUGIN="-p verifier.pytest_plugin"
  export TRITON_CACHE_DIR=${TRITON_CACHE_DIR:-/tmp/kv-triton-cache}
  s=$(date +%s.%N)
  timeout ${MATRIX_TIMEOUT:-300} python3 -m pytest -n auto suites/test_detection_matrix.py -v -p no:cacheprovider $PLUGIN \
    --timeout ${MATRIX_TEST_TIMEOUT:-240} --durations=0 > "$W/matrix.txt" 2>&1; rc=$?
  echo "matrix exit=$rc wall=$(python3 -c "print(round($(date +%s.%N)-$s,1))") s: $(tail -1 "$W/matrix.txt" | cut -c1-150)" \
    | tee -a "$W/suites.txt"
  grep -E "^[0-9.]+s (call|setup)" "$W/matrix.txt" | head -25
fi; pack
if has suites; then
  # an uninstalled checkout loads the plugin by name (the installed package registers it as an entry point)
  PLUGIN=""; python3 -c 'import importlib.metadata as m; m.version("kernel-verifier")' 2>/dev/null || PLUGIN="-p verifier.pytest_plugin"
  export TRITON_CACHE_DIR=${TRITON_CACHE_DIR:-/tmp/kv-triton-cache}
  for n in ${SUITES_WORKERS:-auto}; do
    s=$(date +%s.%N)
    timeout ${SUITES_TIMEOUT:-300} python3 -m pytest -n $n suites -q -p no:cacheprovider $PLUGIN --durations=15 \
      > "$W/suites_n$n.txt" 2>&1; rc=$?
    echo "suites -n $n exit=$rc wall=$(python3 -c "print(round($(date +%s.%N)-$s,1))") s: $(tail -1 "$W/suites_n$n.txt" | cut -c1-150)" \
      | tee -a "$W/suites.txt"
  done
fi; pack
