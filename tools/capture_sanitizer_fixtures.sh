#!/usr/bin/env bash
# Captures the compute-sanitizer fixtures in tests/data/sanitizer/ from the project's own kernels.
#
# Run on a GPU machine from the repository root, with python3 that has torch:
#   PYTHONPATH=$PWD OUT=out tools/capture_sanitizer_fixtures.sh
# Needs `verifier sanitize` (verifier/cli/__init__.py) and the CUDA defect catalogue kernels/defects/cuda/defects.py
# (DEFECTS=... to point elsewhere). About 1-3 minutes.
#
# Writes tests/data/sanitizer/{clean_<tool>,race_racecheck,overread_memcheck,divergent_synccheck,
# uninit_initcheck (only if the catalogue has defect-uninitialized-smem-read)}.xml and CAPTURE.md, and into $OUT (few files, for machines that return only a few):
#   sanitizer-fixtures.tar.gz  the tests/data/sanitizer/ files (untar at the repository root)
#   sanitizer-runs.tar.gz      every run's JSON report, XML and compute-sanitizer log
#   CAPTURE.md                 the same capture record as in tests/data/sanitizer/
# Exits non-zero if a run's exit code is not the expected one (clean 0, defects 1): a fixture that does
# not show what its name says must not be committed.
set -u -o pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
OUT="${OUT:-out}"
DEST=tests/data/sanitizer
RUNS="$OUT/sanitizer-runs"
DEFECTS="${DEFECTS:-kernels/defects/cuda/defects.py}"
PY="${PYTHON:-python3}"
rm -rf "$RUNS" && mkdir -p "$RUNS" "$DEST" || exit 1

CS=$("$PY" -c 'from verifier.sanitizer.runs import find_tool; print(find_tool())') || {
  echo "capture: compute-sanitizer not found" >&2; exit 1; }
"$PY" -m verifier.cli sanitize --help >/dev/null 2>&1 || {
  echo "capture: 'verifier sanitize' is not wired into verifier/cli/__init__.py yet" >&2; exit 1; }
[ -f "$DEFECTS" ] || { echo "capture: $DEFECTS is missing" >&2; exit 1; }

failed=0
rows=""
# capture NAME EXPECTED_EXIT(S) SPEC KERNEL DTYPE TOOL
capture() {
  local name=$1 expect=$2 spec=$3 kernel=$4 dtype=$5 tool=$6
  local dir="$RUNS/$name" t0 t1 rc xml n
  mkdir -p "$dir"
  if [ "$dtype" = first ]; then  # the kernel's first declared dtype variant
    dtype=$("$PY" -c 'import sys; from verifier.declare.registry import load; print(load([sys.argv[1]], [sys.argv[2]])[0].dtypes[0].tag)' \
      "$spec" "$kernel") || { failed=1; echo "capture: cannot load $kernel from $spec" >&2; return; }
  fi
  t0=$(date +%s.%N)
  "$PY" -m verifier.cli sanitize "$spec" --kernel "$kernel" --dtype "$dtype" --tool "$tool" --timeout 120 \
    --format json --output "$dir/report.json" --keep-xml "$dir" 2>"$dir/stderr.txt"
  rc=$?
  t1=$(date +%s.%N)
  xml="$dir/$kernel.$dtype.$tool.xml"
  if [ -f "$xml" ]; then
    cp "$xml" "$DEST/$name.xml"
    n=$(grep -c '<record>' "$xml")
  else
    n="no XML"; failed=1
    echo "capture: $name wrote no XML; stderr:" >&2; tail -5 "$dir/stderr.txt" >&2
  fi
  case " $expect " in *" $rc "*) ;; *) failed=1; echo "capture: $name exited $rc, expected $expect" >&2 ;; esac
  rows="$rows| $name | $kernel | $dtype | $tool | $rc | $n | $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') |"$'\n'
  echo "capture: $name rc=$rc records=$n"
}

for tool in racecheck memcheck synccheck initcheck; do
  capture "clean_$tool" 0 kernels/cuda/softmax_spec.py cuda-softmax-s3 bf16 "$tool"
done
capture race_racecheck 1 "$DEFECTS" defect-missing-syncthreads first racecheck
capture overread_memcheck 1 "$DEFECTS" defect-float4-tail-overread first memcheck
capture divergent_synccheck 1 "$DEFECTS" defect-divergent-syncthreads first synccheck
# Optional. initcheck watches global memory only: an uninitialised shared-memory read may give no record.
if "$PY" -m verifier.cli list "$DEFECTS" --kernel defect-uninitialized-smem-read >/dev/null 2>&1; then
  capture uninit_initcheck "0 1" "$DEFECTS" defect-uninitialized-smem-read first initcheck
else
  rm -f "$DEST/uninit_initcheck.xml"
  rows="$rows| uninit_initcheck | defect-uninitialized-smem-read | - | initcheck | - | not in $DEFECTS | - |"$'\n'
fi

{
  echo "# compute-sanitizer fixture capture"
  echo
  echo "Made by tools/capture_sanitizer_fixtures.sh; do not edit the XML files by hand."
  echo
  echo "- date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "- GPU, driver: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)"
  echo "- commit: $(git rev-parse --short=12 HEAD 2>/dev/null)$(git status --porcelain --untracked-files=no 2>/dev/null | grep -q . && echo -dirty)"
  echo "- repository root on the capture machine: $PWD"
  echo "- python: $("$PY" -c 'import sys, torch; print(sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda)' 2>&1)"
  echo "- compute-sanitizer: $CS"
  echo
  echo '```'
  "$CS" --version
  echo '```'
  echo
  echo "| fixture | kernel | dtype | tool | exit | records | wall s |"
  echo "| --- | --- | --- | --- | --- | --- | --- |"
  printf '%s' "$rows"
} > "$DEST/CAPTURE.md"
cp "$DEST/CAPTURE.md" "$OUT/CAPTURE.md"
tar -czf "$OUT/sanitizer-fixtures.tar.gz" "$DEST"
tar -czf "$OUT/sanitizer-runs.tar.gz" -C "$OUT" sanitizer-runs
rm -rf "$RUNS"
[ "$failed" = 0 ] && echo "capture: done; $DEST and $OUT/sanitizer-fixtures.tar.gz" || echo "capture: FAILED (see above)" >&2
exit "$failed"
