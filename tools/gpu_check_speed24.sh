#!/usr/bin/env bash
# Issue #24 on one CUDA machine (one H200, 16 CPUs: about 8-9 minutes), from the repository root; the package may be
# installed or not (this runs it from source):
#   OUT=/some/dir bash tools/gpu_check_speed24.sh [STEP...]     (default: every step, in this order)
# Carry Liger-Kernel as .whl/liger_kernel-0.8.5-py3-none-any.whl (needs only torch and triton): it is installed
# with --no-deps into a folder on PYTHONPATH; without it the Liger rows are refused and the bench step says so.
# Each step logs to $OUT/<step>.log when OUT is set and prints PASS / FAIL lines; the last lines sum up.
#   env      GPU, driver, versions; the fixed costs of a verdict (import torch, its CUDA init, import triton)
#   jauto    verifier check kernels/ (level ci) at -j auto with empty build and Triton caches (cold), then again
#            warm: <= 60 s cold, <= 30 s warm; 0 resources warnings of the bundled Triton kernels (their spills)
#   verdict  quick verdicts, 3 dtypes, cold and warm, with a phase profile: a CUDA kernel (cuda-rmsnorm-n3,
#            <= 3 s warm), a Triton kernel (triton-softmax, <= 5 s warm), a torch callable (torch-softmax, <= 5 s);
#            <= 10 s cold for each
#   bench    two consecutive `verifier bench` runs (layernorm, RMSNorm, softmax; bf16 and f16; 8192 x {2048, 4096,
#            8192}; the bundled kernels, torch's and Liger's callables): every row's median within 3 % between the
#            runs; host-bound rows listed; cuda-layernorm-rows >= 0.90 of copy and ahead of torch's and Liger's
#   sanitize the four compute-sanitizer tools on cuda-layernorm-rows (3 dtypes)
#   jseq     verifier check kernels/ at -j 1, warm (the side-by-side figure), and its report against -j auto's:
#            the same reports in the same order, the same findings and exit code
set -euo pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
PY="${PYTHON:-python3}"
V="$PY -m verifier.cli"
W=${WORK:-/tmp/speed24}
LOGS=${OUT:-$W/logs}
mkdir -p "$W" "$LOGS"
steps=${*:-env jauto jseq verdict bench sanitize}
has() { case " $steps " in *" $1 "*) return 0;; esac; return 1; }
now_ms() { echo $(( $(date +%s%N) / 1000000 )); }
secs() { local ms=$(( $(now_ms) - $1 )); printf '%d.%03d' $(( ms / 1000 )) $(( ms % 1000 )); }

step() {  # step NAME CMD...: runs CMD, its output to the terminal and to $LOGS/NAME.log; a failure ends only it
  local name=$1 t0; shift
  t0=$(now_ms)
  echo "== $name: $*"
  "$@" 2>&1 | tee "$LOGS/$name.log" || echo "FAIL step $name ended with an error (above)" | tee -a "$LOGS/$name.log"
  echo "(step $name: $(secs "$t0") s)"
}

liger() {
  local whl
  whl=$(ls .whl/liger_kernel-*.whl 2>/dev/null | head -1 || true)
  if [ -n "$whl" ]; then
    "$PY" -m pip install -q --no-deps --target "$W/liger" "$whl" && export PYTHONPATH="$PYTHONPATH:$W/liger"
  fi
  "$PY" -c 'import liger_kernel, importlib.metadata as m; print("liger-kernel", m.version("liger-kernel"))' 2>/dev/null \
    || echo "liger-kernel: not installed (carry .whl/liger_kernel-0.8.5-py3-none-any.whl)"
}

env_step() {
  date -u +%Y-%m-%dT%H:%M:%SZ; git rev-parse HEAD 2>/dev/null || echo "commit: (no .git)"
  nvidia-smi --query-gpu=name,driver_version,memory.total,memory.free --format=csv,noheader; nproc
  nvcc --version | tail -1
  "$PY" -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__)'
  t() { local s; s=$(now_ms); "$@" > /dev/null 2>&1; echo "$(secs "$s") s  $*"; }
  t "$PY" -c pass
  t "$PY" -c 'import torch'
  t "$PY" -c 'import torch; torch.zeros(1, device="cuda"); torch.cuda.synchronize()'
  t "$PY" -c 'import torch, triton'
  t "$PY" -c 'import verifier.isolation.child'
}

check_run() {  # check_run TAG JOBS CACHE: verifier check kernels/ at ci, the wall time on the last line
  local tag=$1 jobs=$2 cache=$3 t0 rc
  t0=$(now_ms)
  set +e
  VERIFIER_CACHE_DIR=$cache TRITON_CACHE_DIR=$cache/triton $V check kernels/ --level ci -j "$jobs" --format json \
    --output "$W/check_$tag.json" 2> "$W/check_$tag.err"
  rc=$?
  set -e
  tail -3 "$W/check_$tag.err"
  echo "check $tag: exit $rc, wall $(secs "$t0") s"
}

jauto_step() {
  rm -rf "$W/cache-check"
  check_run jauto-cold auto "$W/cache-check" | tee "$W/jauto.txt"
  check_run jauto-warm auto "$W/cache-check" | tee -a "$W/jauto.txt"
  "$PY" - "$W" <<'EOF'
import json, re, sys
w = sys.argv[1]
walls = dict(re.findall(r"check (\S+): exit \d+, wall ([\d.]+) s", open(f"{w}/jauto.txt").read()))
cold, warm = float(walls["jauto-cold"]), float(walls["jauto-warm"])
doc = json.load(open(f"{w}/check_jauto-warm.json"))
# the bundled Triton kernels: third-party ones (Liger's) report their own spills, which are theirs to fix
spills = [(k["name"], f["dtype"], f["message"][:90]) for k in doc["kernels"] if k["kind"] == "triton"
          and "third_party" not in k.get("source", "") for f in k["findings"] if f["check"] == "resources"]
for s in spills:
    print("  resources:", *s)
print(f"{'PASS' if cold <= 60 else 'FAIL'} check kernels/ -j auto cold {cold:.1f} s (<= 60)")
print(f"{'PASS' if warm <= 30 else 'FAIL'} check kernels/ -j auto warm {warm:.1f} s (<= 30)")
print(f"{'PASS' if not spills else 'FAIL'} bundled Triton kernels: {len(spills)} resources findings (0 wanted)")
s = doc["summary"]
print(f"  {s['kernels']} kernels, {s['pass']} pass, {s['fail']} fail, {s['error']} error, {s['findings']} findings")
EOF
}

verdict_step() {
  "$PY" benchmarks/verdict_time.py --quick-only --repeats 1 --out "$W/verdict" --warm-cache "$W/cache-check" \
    --target kernels/cuda/rmsnorm_spec.py:cuda-rmsnorm-n3 --target kernels/triton/spec.py:triton-softmax \
    --target kernels/torch/spec.py:torch-softmax || true
}

bench_run() {
  $V bench kernels/cuda/layernorm_spec.py kernels/cuda/layernorm_rows_spec.py kernels/cuda/rmsnorm_spec.py kernels/cuda/softmax_fast_spec.py \
    --kernel cuda-layernorm-rows --kernel cuda-layernorm-twopass --kernel cuda-rmsnorm-n4 --kernel cuda-softmax-s5 \
    --against kernels/torch --against benchmarks/liger_spec.py --dtype bf16 --dtype f16 \
    --shape 8192x2048 --shape 8192x4096 --shape 8192x8192 --runs 50 --format json --output "$W/bench_$1.json" \
    2> "$W/bench_$1.err" || { tail -5 "$W/bench_$1.err"; return 1; }
  $PY -c "from verifier.bench.json import from_dict; from verifier.bench.text import render; import json; \
print(render(from_dict(json.load(open('$W/bench_$1.json')))))"
}

bench_step() {
  export VERIFIER_CACHE_DIR=${VERIFIER_CACHE_DIR:-$W/cache-check} TRITON_CACHE_DIR=${TRITON_CACHE_DIR:-$W/cache-check/triton}
  bench_run 1
  bench_run 2
  "$PY" - "$W" <<'EOF'
import json, sys
w = sys.argv[1]
a, b = (json.load(open(f"{w}/bench_{i}.json"))["rows"] for i in (1, 2))
key = lambda r: (r["kernel"], r["op"], r["dtype"], r["M"], r["N"])
rb = {key(r): r for r in b}
worst, bad = 0.0, []
print(f"{'kernel':24s} {'dtype':5s} {'M x N':>11s} {'run 1 us':>9s} {'run 2 us':>9s} {'diff':>6s} {'host us':>8s} via")
for r in a:
    s = rb.get(key(r))
    if r["status"] != "ok" or not s or s["status"] != "ok":
        print(f"{r['kernel']:24s} {r['dtype']:5s} {r['M']}x{r['N']:<6d} {r['status']}: {r['note'][:70]}")
        continue
    d = abs(s["median_ms"] - r["median_ms"]) / min(s["median_ms"], r["median_ms"])
    worst = max(worst, d)
    if d > 0.03:
        bad.append(key(r))
    flag = " HOST-BOUND" if r.get("host_bound") else ""
    print(f"{r['kernel']:24s} {r['dtype']:5s} {r['M']}x{r['N']:<6d} {r['median_ms']*1e3:9.1f} {s['median_ms']*1e3:9.1f} "
          f"{d*100:5.1f}% {r['host_ms']*1e3:8.1f} {r['method']}{flag}")
print(f"{'PASS' if not bad else 'FAIL'} bench repeats: worst row {worst*100:.1f} % apart (<= 3 %); {len(bad)} rows over")
ok = True
for dt in ("bf16", "f16"):
    for N in (2048, 4096, 8192):
        rows = {r["kernel"]: r for r in a if r["op"] == "layernorm" and r["dtype"] == dt and r["N"] == N
                and r["status"] == "ok"}
        mine = rows.get("cuda-layernorm-rows")
        if not mine:
            print(f"FAIL layernorm {dt} 8192x{N}: cuda-layernorm-rows has no timed row"); ok = False; continue
        others = {k: v["median_ms"] for k, v in rows.items() if k in ("torch-layer-norm", "liger-layernorm")}
        ahead = all(mine["median_ms"] < t for t in others.values())
        good = mine["ratio_to_copy"] >= 0.90 and ahead and len(others) == 2
        ok &= good
        print(f"{'PASS' if good else 'FAIL'} layernorm {dt} 8192x{N}: rows x{mine['ratio_to_copy']:.3f} of copy "
              f"({mine['median_ms']*1e3:.1f} us); " + ", ".join(f"{k} {v*1e3:.1f} us" for k, v in others.items())
              + ("" if len(others) == 2 else " (torch's or Liger's row missing)"))
print(f"{'PASS' if ok else 'FAIL'} bundled layernorm >= 0.90 of copy and ahead of torch's and Liger's")
EOF
}

sanitize_step() {
  $V sanitize kernels/cuda/layernorm_rows_spec.py --kernel cuda-layernorm-rows -j 12
}

jseq_step() {
  check_run jseq-warm 1 "$W/cache-check" | tee "$W/jseq.txt"
  "$PY" - "$W" <<'EOF'
import json, re, sys
w = sys.argv[1]
a, b = (json.load(open(f"{w}/check_{t}.json")) for t in ("jauto-warm", "jseq-warm"))
strip = lambda d: [{k: v for k, v in e.items() if k != "seconds"} for e in d["kernels"]]
same = strip(a) == strip(b) and a["summary"] == b["summary"]
text = open(f"{w}/jauto.txt").read() + open(f"{w}/jseq.txt").read()
runs = {t: (int(rc), float(s)) for t, rc, s in re.findall(r"check (\S+): exit (\d+), wall ([\d.]+) s", text)}
print(f"{'PASS' if same and runs['jauto-warm'][0] == runs['jseq-warm'][0] else 'FAIL'} -j auto and -j 1 reports "
      f"identical (kernels, order, findings, summary; exit {runs['jauto-warm'][0]} / {runs['jseq-warm'][0]})")
print("side by side, verifier check kernels/ --level ci: " + ", ".join(f"{t} {s:.1f} s" for t, (rc, s) in runs.items()))
EOF
}

liger > "$LOGS/liger.log"  # here, not in a pipeline: its PYTHONPATH must reach the steps
cat "$LOGS/liger.log"
has env && step env env_step
has jauto && step jauto jauto_step
has jseq && step jseq jseq_step  # right after jauto: the side-by-side figure, on the same warm caches
has verdict && step verdict verdict_step
has bench && step bench bench_step
has sanitize && step sanitize sanitize_step
echo "== summary"
for s in env jauto jseq verdict bench sanitize; do
  grep -hE "^(PASS|FAIL)|side by side|^verifier sanitize:" "$LOGS/$s.log" 2>/dev/null || true
done
