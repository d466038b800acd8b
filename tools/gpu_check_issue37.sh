#!/usr/bin/env bash
# Issues #36 and #37 on one H200 in one device call, from the repository root, carrying .whl/ (what it holds:
# kernels/third_party/README.md):
#   OUT=/some/dir bash tools/gpu_check_issue37.sh [STEP ...]      (default: every step)
# GPU_TEST_IDS / SANITIZE_ARGS replace gputests' test ids / sanitize's paths and options (reruns).
# Steps (each prints PASS / FAIL with its seconds; logs in $OUT/logs.tgz, a summary in $OUT/summary.txt):
#   main67     main over the 67 kernels bundled when issue #36 measured 41 s (benchmarks/kernels_at_5f9ab5c.txt)
#   main       README's main job, cold (fresh verifier and Triton caches), alone on the GPU and timed: `verifier check
#              kernels/ -j auto --level ci` without the third-party packages, as a fresh machine has it (issue #36:
#              at most 45 s, no finding on a correct kernel)
#   phases     where a cold check's time goes, phase by phase (nvcc, Triton compile, launch, reference, compare,
#              ...), for 14 kernels of every kind, one after another (benchmarks/main_job_phases.py): what to make
#              cheaper if `main` is over 45 s
#   gputests   the GPU test files of the op families and of the large cases (nothing may skip)
#   thirdparty verifier check kernels/third_party --level ci with Liger and FlashInfer's headers present
#              (FlashInfer's uint32 offsets are static offset-wrap findings: a fail there is expected)
#   extras     what the CPU-only sessions of 2026-12-05 left for a GPU: FlashInfer past 2^32 (does the wrap the
#              lint reads show at run time), the offset twins, callables over autotuned library Triton kernels
#              compiled (pinned per config), the summed rounding statistics' fixtures
#   sanitize   the four compute-sanitizer tools on every kernel of the op families (ours, CUDA and Triton)
#   detection  every defect only a GPU catches without a GPU result yet, one process each, then the
#              assert_close column for them: detection-gpu-37.json / assert-close-gpu-37.json for
#              kernels/defects/results/
#   pytest     the whole test suite on the GPU (-n 16), skip reasons listed (-rs)
#   bench      verifier bench of the families' kernels beside the torch compositions and third-party kernels
#              (alone on the GPU, last)
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:?set OUT}
PY="${PYTHON:-python3}"
LOGS=/tmp/gpu_check_issue37
rm -rf "$LOGS" && mkdir -p "$LOGS" "$OUT"
SITE=$LOGS/site
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
WITH_SITE="$PWD:$SITE"
TO=(timeout -k 10 "${STEP_LIMIT:-470}")  # each step's heavy command: one slow step leaves the others their time
STEPS=("${@:-main phases gputests thirdparty extras sanitize detection bench}")
read -r -a STEPS <<< "${STEPS[*]}"
FAMILY_SPECS=(kernels/cuda/quant_spec.py kernels/triton/quant_spec.py kernels/cuda/masked_softmax_spec.py
  kernels/triton/masked_softmax_spec.py kernels/cuda/routing_spec.py kernels/triton/routing_spec.py
  kernels/cuda/merge_states_spec.py kernels/triton/merge_states_spec.py kernels/cuda/norm_variants_spec.py
  kernels/triton/norm_variants_spec.py kernels/cuda/cross_entropy_variants_spec.py
  kernels/triton/cross_entropy_variants_spec.py)
FAMILY_SPECS+=(kernels/cuda/top_k_sampling_spec.py kernels/triton/top_k_sampling_spec.py)  # sampling's top-k filters
FAMILY_SPECS+=(kernels/triton/group_quant_spec.py)  # per-token-group quantizer (production quantizers, vLLM / SGLang)
FAMILY_SPECS+=(kernels/triton/group_hidden_spec.py)  # group_rmsnorm / group_layernorm (groups over the hidden dim)
FAMILY_SPECS+=(kernels/cuda/argmax_spec.py kernels/triton/argmax_spec.py)  # row_argmax (greedy sampling)
GPU_TESTS=(tests/test_quant_gpu.py tests/test_masked_softmax_gpu.py tests/test_routing_gpu.py
  tests/test_norm_variants_gpu.py tests/test_cross_entropy_variants_gpu.py tests/test_large_gpu.py)
GPU_TESTS+=(tests/test_top_k_sampling_gpu.py)  # our CUDA top-k filters and FlashInfer's (its headers from .whl/)
GPU_TESTS+=(tests/test_group_quant_gpu.py)
GPU_TESTS+=(tests/test_group_hidden_gpu.py)
GPU_TESTS+=(tests/test_softmax_lse_gpu.py)  # softmax / log_softmax writing the row's lse too
GPU_TESTS+=(tests/test_empty_launches.py)  # a shape the host launches nothing for: unwritten
GPU_TESTS+=(tests/test_output_layout_gpu.py)  # outputs at a declared layout (ids n_expert apart, column-major scales)
GPU_TESTS+=(tests/test_row_argmax_gpu.py)  # our CUDA and compiled Triton row_argmax, the CUDA defect twins
GPU_TESTS+=(tests/test_cuda_own_stride_gpu.py)  # strided case: each named tensor its own stride (y at x's fails)
GPU_TESTS+=(tests/test_flashinfer_merge_state_gpu.py)  # two empty states: v = 0, lse = -inf (empty="zero")
GPU_TESTS+=(tests/test_bench_capture_gpu.py)  # an uncapturable call timed, the default generator still draws
exist() { for f in "$@"; do [ -e "$f" ] && printf '%s\n' "$f"; done; }
mapfile -t FAMILY_SPECS < <(exist "${FAMILY_SPECS[@]}")
mapfile -t GPU_TESTS < <(exist "${GPU_TESTS[@]}")
{ echo "date: $(date -u +%FT%TZ)"; echo "tree: ${TREE_COMMIT:-unknown} (the device's .git is stale)";
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; } > "$LOGS/env.txt" 2>&1
cat "$LOGS/env.txt"

step() {  # step NAME CMD...: CMD's output to $LOGS/NAME.log; a PASS / FAIL line with seconds
  local name=$1; shift
  local t0=$SECONDS
  if "$@" > "$LOGS/$name.log" 2>&1; then echo "PASS $name ($((SECONDS - t0)) s)"
  else echo "FAIL $name ($((SECONDS - t0)) s; rc $?)"; tail -n 25 "$LOGS/$name.log" | sed "s/^/  $name| /"; fi
  pack
}
pack() {  # the logs so far into $OUT (a call stopped at its limit still brings back every step that ended)
  tar czf "$OUT/.logs.$BASHPID.tgz" -C "$LOGS" --exclude=site --exclude='*.cubin' . 2>/dev/null
  mv -f "$OUT/.logs.$BASHPID.tgz" "$OUT/logs.tgz"
}
want() { [[ " ${STEPS[*]} " == *" $1 "* ]]; }

setup() {
  mkdir -p "$SITE"
  "$PY" -m pip install -q --no-deps --no-index --target "$SITE" .whl/liger_kernel-0.8.5-py3-none-any.whl || return 1
  cp -r .whl/flashinfer-0.7.4-include/flashinfer "$SITE/"
}

main_job() {  # main_job TAG [verifier check options...]: $LOGS/TAG_ci.json, TAG_wall.txt, TAG_costs.txt
  local tag=$1 t0 t1 tcache vcache
  shift
  tcache=$(mktemp -d) vcache=$(mktemp -d)
  t0=$(date +%s.%N)
  VERIFIER_CACHE_DIR=$vcache TRITON_CACHE_DIR=$tcache "$PY" -m verifier.cli check kernels/ -j auto \
    --level ci --format json --no-progress "$@" > "$LOGS/${tag}_ci.json"
  t1=$(date +%s.%N)
  echo "$t0 $t1" | awk '{print $2 - $1}' > "$LOGS/${tag}_wall.txt"
  # where a cold run's time goes: Triton compilations per function (one cache entry each), the slowest kernels
  "$PY" - "$tcache" "$vcache" "$LOGS/${tag}_ci.json" > "$LOGS/${tag}_costs.txt" <<'PYEOF'
import json, pathlib, sys
from collections import Counter
t = pathlib.Path(sys.argv[1])
names = Counter(p.stem for p in t.glob("*/*.json") if not p.name.startswith("__grp__"))
print(f"triton compilations: {sum(names.values())} of {len(names)} functions")
for n, c in names.most_common(60):
    print(f"  {c:4d} {n}")
print(f"verifier cache entries: {sum(1 for _ in pathlib.Path(sys.argv[2]).rglob('*') if _.is_file())}")
ks = json.load(open(sys.argv[3]))["kernels"]
print(f"kernel seconds: sum {sum(k.get('seconds', 0) for k in ks):.0f}")
for k in sorted(ks, key=lambda k: -k.get("seconds", 0))[:60]:
    print(f"  {k.get('seconds', 0):7.1f} {k['name']} {k['verdict']}")
PYEOF
  "$PY" - "$LOGS/${tag}_ci.json" "$t0" "$t1" <<'PYEOF'
import json, sys
from collections import Counter
d = json.load(open(sys.argv[1]))
wall = float(sys.argv[3]) - float(sys.argv[2])
ks = d["kernels"]
print(f"cold wall {wall:.1f} s; {len(ks)} kernels; verdicts {dict(Counter(k['verdict'] for k in ks))}")
bad = [k for k in ks if k["verdict"] not in ("pass", "skipped") or any(f.get("severity") != "warning" for f in k.get("findings", []))]
for k in bad:
    print("BAD", k["name"], k["verdict"], [(f.get("check"), f.get("message", "")[:300]) for f in k.get("findings", [])][:4])
sys.exit(1 if bad or wall > 45 else 0)
PYEOF
}

phases() {
  local k=() n
  for n in cuda-softmax-s1 cuda-rmsnorm-n2 cuda-layernorm-welford cuda-cross-entropy cuda-per-token-quant \
      cuda-topk-softmax cuda-allreduce-bf16x8-f32acc triton-rmsnorm triton-online-softmax triton-cross-entropy \
      triton-rmsnorm-quant triton-topk-softmax torch-softmax torch-layer-norm; do k+=(--kernel "$n"); done
  VERIFIER_CACHE_DIR=$(mktemp -d) TRITON_CACHE_DIR=$(mktemp -d) "$PY" benchmarks/main_job_phases.py kernels/ \
    "${k[@]}" --jobs 16 --out "$OUT/phases.json"
}

gputests() {
  local ids=("${GPU_TESTS[@]}" tests/test_aliasing.py tests/test_third_party_gpu.py)
  [ -n "${GPU_TEST_IDS:-}" ] && read -r -a ids <<< "$GPU_TEST_IDS"  # a rerun of some tests only
  PYTHONPATH=$WITH_SITE "${TO[@]}" "$PY" -m pytest -p no:randomly -p no:cacheprovider -n 8 -v --tb=short -rfEs "${ids[@]}" \
    > "$LOGS/gputests.txt" 2>&1
  local rc=$?
  cat "$LOGS/gputests.txt"
  if grep -qE "^SKIPPED" "$LOGS/gputests.txt"; then echo "tests skipped (above)"; return 1; fi
  return $rc
}

thirdparty() {
  PYTHONPATH=$WITH_SITE "${TO[@]}" "$PY" -m verifier.cli check kernels/third_party --device cuda --level ci -j 6 --no-progress
}

extras() {  # findings are expected here: read its log (summary.txt)
  PYTHONPATH=$WITH_SITE "${TO[@]}" "$PY" -m verifier.cli check kernels/third_party/flashinfer --device cuda \
    --case large_index_2pow32 --no-progress
  "${TO[@]}" "$PY" -m verifier.cli check kernels/defects/cuda/defects.py --kernel defect-cuda-rmsnorm-int32-row-offset \
    --kernel defect-cuda-rmsnorm-unsigned-row-offset --kernel defect-cuda-rmsnorm-int32-row-stride --device cuda \
    --level ci --no-progress
  # expected: callable-rowsum-through-a-library fail (BLOCK=32 configs), callable-triton-rmsnorm pass,
  # callable-triton-truncating fail (rounding); row-mean-toward-zero-f16 and triton-row-mean-toward-zero-f16 fail
  # with input 'all cases', the others pass
  "${TO[@]}" "$PY" -m verifier.cli check tests/data/autotune_elsewhere/callable_spec.py tests/data/rounding_pool/ \
    --device cuda --level ci --no-progress
  return 0  # findings are expected above: read the log (summary.txt)
}

sanitize() {
  local paths=("${FAMILY_SPECS[@]}" kernels/third_party/flashinfer)
  [ -n "${SANITIZE_ARGS:-}" ] && read -r -a paths <<< "$SANITIZE_ARGS"  # a rerun of some kernels only
  PYTHONPATH=$WITH_SITE "${TO[@]}" "$PY" -m verifier.cli sanitize "${paths[@]}" -j "${SANITIZE_JOBS:-8}" \
    --timeout 240 --format json --output "$LOGS/sanitize.json"
  local rc=$?
  "$PY" - "$LOGS/sanitize.json" <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1]))
print(json.dumps(d.get("summary", {}), indent=1)[:3000])
for k in d.get("kernels", []):
    fs = k.get("findings", [])
    if fs or k.get("verdict") not in ("pass", "skipped"):
        print("BAD", k.get("name"), k.get("verdict"), [(f.get("check"), f.get("message", "")[:200]) for f in fs][:4])
PYEOF
  return $rc
}

detection() {
  "$PY" - > "$LOGS/pending_defects.txt" <<'PYEOF'
import json, pathlib, sys
sys.path.insert(0, "tools")
from assert_close_matrix import _matrix
res = pathlib.Path("kernels/defects/results")
have = set()
for f in res.glob("detection-gpu*.json"):
    have |= set(json.loads(f.read_text())["defects"])
for e in _matrix().load_entries():
    if e.name not in have and e.device == "gpu":  # a CPU-caught defect's row is already measured (CI)
        print(e.name)
PYEOF
  echo "defects without a GPU result: $(wc -l < "$LOGS/pending_defects.txt")"; cat "$LOGS/pending_defects.txt"
  mkdir -p "$LOGS/det"
  xargs -P 8 -I{} sh -c "timeout -k 10 300 $PY tools/detection_table.py run --device cuda --sanitize --defect {} --out $LOGS/det/{}.json > $LOGS/det/{}.log 2>&1 || echo 'run failed: {}'" < "$LOGS/pending_defects.txt"
  local parts=() acargs=()
  for f in "$LOGS"/det/*.json; do parts+=(--battery "$f"); done
  "$PY" tools/detection_table.py merge "${parts[@]}" --out "$OUT/detection-gpu-37.json" || return 1
  while read -r d; do acargs+=(--defect "$d"); done < "$LOGS/pending_defects.txt"
  "$PY" tools/assert_close_matrix.py --device cuda "${acargs[@]}" --out "$OUT/assert-close-gpu-37.json" || return 1
  "$PY" - "$OUT/detection-gpu-37.json" <<'PYEOF'
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

full_pytest() {
  PYTHONPATH=$WITH_SITE "${TO[@]}" "$PY" -m pytest -q -p no:cacheprovider -n 16 -rs > "$LOGS/pytest.txt" 2>&1
  local rc=$?
  tail -n 80 "$LOGS/pytest.txt"
  return $rc
}

bench_dtypes() {  # the --dtype flags of the wanted tags that the kernels under $1 declare
  PYTHONPATH=$WITH_SITE "$PY" - "$1" <<'PYEOF'
import sys
from verifier.declare import registry
want = ["bf16", "bf16toe4m3", "f32", "bf16tof32"]
tags = {d.tag for k in registry.load([sys.argv[1]], None) for d in k.dtypes}
print(" ".join(f"--dtype {t}" for t in want if t in tags))
PYEOF
}

bench() {  # builds first, 8 at once (their timings thrown away), then each spec timed alone: a cut keeps the rest
  local paths=("${FAMILY_SPECS[@]}" kernels/third_party/flashinfer kernels/third_party/liger) p d
  [ -n "${BENCH_PATHS:-}" ] && read -r -a paths <<< "$BENCH_PATHS"
  local args=(--against kernels/torch --shape 16384x256 --shape 8192x4096)
  : > "$LOGS/bench.jobs"
  for p in "${paths[@]}"; do d=$(bench_dtypes "$p"); echo "$p $d" >> "$LOGS/bench.jobs"; done
  PYTHONPATH=$WITH_SITE xargs -P 8 -L 1 timeout -k 5 "${BENCH_WARM_S:-150}" "$PY" -m verifier.cli bench "${args[@]}" \
    --runs 20 --warmup 1 < "$LOGS/bench.jobs" > /dev/null 2>&1
  : > "$LOGS/bench.md"
  while read -r -a job; do
    echo "### ${job[*]}" >> "$LOGS/bench.md"
    PYTHONPATH=$WITH_SITE timeout -k 5 120 "$PY" -m verifier.cli bench "${job[@]}" "${args[@]}" --runs 20 \
      --format markdown >> "$LOGS/bench.md" 2>> "$LOGS/bench.err" || echo "(rc $?)" >> "$LOGS/bench.md"
    cp "$LOGS/bench.md" "$OUT/bench.md"
  done < "$LOGS/bench.jobs"
  cat "$LOGS/bench.md"
}

step setup setup
want main && step main main_job main
# main67: the same, over the 67 kernels bundled when issue #36 measured 41 s (5f9ab5c): these checks' own cost
if want main67; then
  k67=()
  while read -r n; do [[ -z "$n" || "$n" == \#* ]] || k67+=(--kernel "$n"); done < benchmarks/kernels_at_5f9ab5c.txt
  step main67 main_job main67 "${k67[@]}"
fi
# phases: where the time goes; with PHASES_IF_SLOW=1 only when main was over 45 s
if want phases && { [ -z "${PHASES_IF_SLOW:-}" ] || awk '{exit !($1 > 45)}' "$LOGS/main_wall.txt" 2>/dev/null; }; then
  step phases phases
fi
pids=()
want gputests && { step gputests gputests & pids+=($!); }
want thirdparty && { step thirdparty thirdparty & pids+=($!); }
want extras && { step extras extras & pids+=($!); }
want sanitize && { step sanitize sanitize & pids+=($!); }
want detection && { step detection detection & pids+=($!); }
for p in "${pids[@]}"; do wait "$p"; done
want pytest && step pytest full_pytest
want bench && step bench bench
{ cat "$LOGS/env.txt"; for f in "$LOGS"/*.log; do echo "=== $(basename "$f")"; tail -n 60 "$f"; done; } > "$OUT/summary.txt"
cp "$LOGS"/main_ci.json "$LOGS"/bench.md "$OUT/" 2>/dev/null
pack
ls -la "$OUT"
