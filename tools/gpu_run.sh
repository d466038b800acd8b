#!/usr/bin/env bash
# One recorded GPU session: what every GPU claim in the repo (docs/gpu-runs/) comes from.
# Runs on a CUDA machine from the repo root, with python3 holding torch and triton:
#   OUT=/some/dir VERIFIER_COMMIT=<commit the tree is at> bash tools/gpu_run.sh [STEP...]
#   steps: env check bandwidth matrix triton-matrix sanitizer sanitize crash plugin-sanitize suites lint-defects
#   (default: env check bandwidth matrix sanitizer sanitize suites)
# Each step writes its logs under a work folder and never stops the others; at the end everything is packed
# into $OUT/gpu-run.tar.gz (one file, for machines that return only a few).
set -u
FINAL=${OUT:-$PWD/gpu-out}
OUT=${WORK:-/tmp/gpu-run}
mkdir -p "$OUT" "$FINAL"
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
export VERIFIER_CACHE_DIR=${VERIFIER_CACHE_DIR:-/tmp/kv-cache}
steps=${*:-env check bandwidth matrix sanitizer sanitize suites}
has() { case " $steps " in *" $1 "*) return 0;; esac; return 1; }
stamp() { date -u +%Y-%m-%dT%H:%M:%SZ; }
# Packed after every step, so a run killed at a time limit still returns the steps it finished.
pack() { tar -czf "$FINAL/gpu-run.tar.gz" -C "$(dirname "$OUT")" "$(basename "$OUT")"; }

if has env; then
  {
    echo "date: $(stamp)"
    # A copied tree may carry no .git, or a stale one: pass VERIFIER_COMMIT=<the commit it was copied at>.
    echo "commit: ${VERIFIER_COMMIT:-$(git rev-parse --short=12 HEAD 2>/dev/null)$(git diff --quiet HEAD 2>/dev/null || echo -dirty)}"
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
    nvcc --version | tail -2
    compute-sanitizer --version 2>/dev/null | head -2
    python3 -c 'import sys,torch,triton,numpy;print("python",sys.version.split()[0],"torch",torch.__version__,"cuda",torch.version.cuda,"triton",triton.__version__,"numpy",numpy.__version__)'
  } > "$OUT/env.txt" 2>&1
  cat "$OUT/env.txt"
fi
pack

if has check; then
  # The bundled kernels in four groups at once (the battery is CPU-heavy in its references; each kernel
  # runs in its own child process on the one GPU).
  t0=$(date +%s)
  pids=()
  for g in cuda/softmax_spec.py cuda/online_softmax_spec.py "cuda/rmsnorm_spec.py cuda/layernorm_spec.py cuda/fused_add_rmsnorm_spec.py" "cuda/allreduce_spec.py cuda/cross_entropy_spec.py" triton torch; do
    name=$(echo "$g" | cut -d' ' -f1 | tr '/.' '__')
    paths=$(for p in $g; do printf 'kernels/%s ' "$p"; done)
    ( python3 -m verifier.cli check $paths --device cuda --level "${LEVEL:-${BUDGET:-ci}}" --format json \
        --output "$OUT/check_$name.json" --no-progress 2> "$OUT/check_$name.err"; echo "exit $?" >> "$OUT/check_$name.err" ) &
    pids+=($!)
  done
  wait "${pids[@]}"
  echo "check wall: $(( $(date +%s) - t0 )) s" | tee "$OUT/check_wall.txt"
  python3 tools/summarize_check.py "$OUT"/check_*.json > "$OUT/check_summary.md" 2>&1
  cat "$OUT/check_summary.md" | head -80
fi
pack

if has bandwidth; then
  python3 benchmarks/bandwidth.py > "$OUT/bandwidth.txt" 2>&1
  cat "$OUT/bandwidth.txt"
fi
pack

if has matrix; then
  # Detection matrix on the GPU: every defect (sanitizer classes included) and twin, then assert_close on randn.
  python3 tools/detection_table.py run --device cuda --sanitize --out "$OUT/detection-gpu.json" > "$OUT/matrix.txt" 2>&1
  echo "detection run exit $?" >> "$OUT/matrix.txt"; tail -30 "$OUT/matrix.txt"
  python3 tools/assert_close_matrix.py --device cuda --out "$OUT/assert-close-gpu.json" > "$OUT/assert_close.txt" 2>&1
  echo "assert_close run exit $?" >> "$OUT/assert_close.txt"; tail -5 "$OUT/assert_close.txt"
fi
pack

if has sanitizer; then
  if [ -f tools/capture_sanitizer_fixtures.sh ]; then
    OUT="$OUT/sanitizer" bash tools/capture_sanitizer_fixtures.sh > "$OUT/sanitizer.txt" 2>&1
    tail -30 "$OUT/sanitizer.txt"
  fi
fi
pack

if has sanitize; then
  # Every bundled CUDA and Triton kernel under all four compute-sanitizer tools, one tool at a time so each
  # tool's wall time is recorded; within a tool, SAN_JOBS runs at once (spread over the GPUs).
  for tool in racecheck memcheck synccheck initcheck; do
    t0=$(date +%s)
    python3 -m verifier.cli sanitize kernels/cuda kernels/triton --tool $tool --jobs "${SAN_JOBS:-auto}" \
      --timeout "${SAN_TIMEOUT:-180}" --format json --output "$OUT/sanitize_$tool.json" > "$OUT/sanitize_$tool.txt" 2>&1
    rc=$?
    echo "sanitize $tool: $(( $(date +%s) - t0 )) s, exit $rc" | tee -a "$OUT/sanitize_wall.txt"
    tail -1 "$OUT/sanitize_$tool.txt"
    pack
  done
  python3 tools/summarize_check.py "$OUT"/sanitize_*.json > "$OUT/sanitize_summary.md" 2>&1
fi
pack

if has triton-matrix; then
  # The Triton defects compiled (CI runs them in the interpreter), one process per defect, then joined;
  # and plain assert_close on randn on the GPU for every defect.
  t0=$(date +%s)
  names=$(python3 -c 'import sys; sys.path.insert(0, "tools"); from assert_close_matrix import _matrix
print(" ".join(e.name for e in _matrix().load_entries() if e.spec.kind == "triton"))')
  pids=()
  for d in $names; do
    python3 tools/detection_table.py run --device cuda --sanitize --defect "$d" --out "$OUT/det_$d.json" \
      > "$OUT/det_$d.txt" 2>&1 &
    pids+=($!)
  done
  wait "${pids[@]}"
  python3 tools/detection_table.py merge $(for d in $names; do printf -- '--battery %s ' "$OUT/det_$d.json"; done) \
    --out "$OUT/detection-gpu-triton.json" > "$OUT/triton_matrix.txt" 2>&1
  echo "triton defects: $(( $(date +%s) - t0 )) s" | tee -a "$OUT/triton_matrix.txt"
  python3 tools/assert_close_matrix.py --device cuda --out "$OUT/assert-close-gpu.json" > "$OUT/assert_close.txt" 2>&1
  echo "assert_close run exit $?" >> "$OUT/assert_close.txt"; tail -3 "$OUT/assert_close.txt"
fi
pack

# The pytest plugin is registered by the package's entry point; an uninstalled checkout loads it by name.
PLUGIN=""
python3 -c 'import importlib.metadata as m; m.version("kernel-verifier")' 2>/dev/null || PLUGIN="-p verifier.pytest_plugin"
PYTEST="python3 -m pytest -q -p no:cacheprovider $PLUGIN"

if has crash; then
  # One faulting test among a correct kernel's: the worker it lands on re-runs its later tests in child
  # processes; the other worker must be untouched (no isolated tests, all results in-process).
  $PYTEST -n 2 suites/test_ops.py --verifier-specs tests/data/gpu/crash_spec.py --verifier-device cuda \
    -k "test_softmax and (gpu-crash-illegal-address-f32-normal_small or cuda-softmax-s3)" --junitxml "$OUT/crash.xml" -rf \
    > "$OUT/crash.txt" 2>&1
  echo "crash run exit $?" >> "$OUT/crash.txt"
  python3 tools/junit_workers.py "$OUT/crash.xml" >> "$OUT/crash.txt" 2>&1
  tail -12 "$OUT/crash.txt"
fi
pack

if has plugin-sanitize; then
  # --verifier-sanitize: the GPU tests of two kernels re-run, each under every compute-sanitizer tool.
  t0=$(date +%s)
  $PYTEST -n "${PSAN_WORKERS:-8}" suites/test_ops.py --verifier-device cuda --verifier-sanitize \
    --verifier-kernels cuda-softmax-s3,triton-softmax -m sanitizer \
    -k "test_softmax and (f32-d7_below_warp or f32-cols_mod4_1029)" \
    --junitxml "$OUT/plugin_sanitize.xml" -rf > "$OUT/plugin_sanitize.txt" 2>&1
  echo "plugin sanitize exit $?, $(( $(date +%s) - t0 )) s" | tee -a "$OUT/plugin_sanitize.txt"
  tail -4 "$OUT/plugin_sanitize.txt"
fi
pack

if has suites; then
  # GPU suite wall time with one worker and with -n auto (one worker per GPU), in one run, after an untimed
  # warm-up run (nvcc and Triton caches). SUITES defaults to the op suites (suites/test_ops.py): the detection-matrix suite
  # runs every defect's whole battery under compute-sanitizer and is recorded by the matrix steps instead.
  python3 benchmarks/ci_suite_time.py --warmup ${SUITES:-suites/test_ops.py} \
    -- $PLUGIN --verifier-device cuda > "$OUT/suites_time.txt" 2>&1
  echo "exit $?" >> "$OUT/suites_time.txt"; cat "$OUT/suites_time.txt"
fi
pack
if has lint-defects; then
  # The sync/race defects of the catalogue and their twins under racecheck, synccheck and memcheck, XML kept:
  # the sanitizer side of docs/static-vs-sanitizers.md (`verifier lint`, its other side, runs in CI).
  kernels=""
  for k in defect-missing-syncthreads defect-block-reduce-twice-no-barrier defect-divergent-syncthreads \
           defect-early-exit-before-barrier defect-tree-first-barrier-missing defect-shuffle-inactive-lanes \
           defect-global-scratch-shared-by-blocks cuda-rmsnorm-block cuda-rmsnorm-tree cuda-rmsnorm-small \
           cuda-rmsnorm-global-scratch; do kernels="$kernels --kernel $k"; done
  t0=$(date +%s)
  python3 -m verifier.cli sanitize kernels/defects/cuda/defects.py kernels/cuda/layernorm_spec.py $kernels \
    --kernel cuda-layernorm-twopass --dtype f32 --tool racecheck --tool synccheck --tool memcheck \
    --jobs ${SAN_JOBS:-16} --timeout ${SAN_TIMEOUT:-90} --format json --keep-xml "$OUT/lint-defects-xml" \
    --output "$OUT/lint_defects_sanitize.json" > "$OUT/lint_defects_sanitize.log" 2>&1
  echo "exit $? wall $(( $(date +%s) - t0 )) s" >> "$OUT/lint_defects_sanitize.log"
  tail -3 "$OUT/lint_defects_sanitize.log"
fi
pack
echo "done $(stamp)" | tee "$OUT/done.txt"
pack
