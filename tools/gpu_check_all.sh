#!/usr/bin/env bash
# The GPU checks of issues #23, #25 and #24 on one H200 in two device calls, logs packed for the device tool's
# file limit (8 files back from $OUT): from the repository root, carrying .whl/ (tools/gpu_check_world23.sh says
# what it holds):
#   OUT=/dir bash tools/gpu_check_all.sh world   # #23 (lint half, rest) and #25, side by side (about 8 minutes)
#   OUT=/dir bash tools/gpu_check_all.sh speed   # #24 (about 9 minutes)
# Each script keeps its own PASS / FAIL lines; $OUT/summary.txt gathers them, $OUT/logs-<part>.tgz holds the logs.
# A script that outlives its share of the call's time is stopped (its log says how far it got).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:?set OUT}
part=${1:?world or speed}
LOGS=/tmp/gpu_check_all/$part
rm -rf "$LOGS" && mkdir -p "$LOGS"
export PYTHONUNBUFFERED=1
{ echo "date: $(date -u +%FT%TZ)"; echo "commit: $(git rev-parse HEAD 2>/dev/null || echo unknown)";
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; } > "$LOGS/env.txt" 2>&1

run() {  # run NAME SECONDS SCRIPT [ARGS]: SCRIPT with its own OUT, stopped after SECONDS
  local name=$1 secs=$2; shift 2
  mkdir -p "$LOGS/$name"
  OUT="$LOGS/$name" WORK="$LOGS/$name/work" timeout -k 10 "$secs" bash "$@" > "$LOGS/$name.txt" 2>&1
  echo "exit $? ($name)" >> "$LOGS/$name.txt"
}

case "$part" in
  world)  # side by side: the GPU is large and each script is mostly short processes
    run lint23 420 tools/gpu_check_lint23.sh &
    run inputs25 480 tools/gpu_check_inputs25.sh &
    run world23 480 tools/gpu_check_world23.sh &
    wait ;;
  speed)
    run speed24 540 tools/gpu_check_speed24.sh "${@:2}" ;;
  *) echo "unknown part $part (world or speed)"; exit 2 ;;
esac
{ cat "$LOGS/env.txt"; for f in "$LOGS"/*.txt; do [ "$f" = "$LOGS/env.txt" ] && continue
    echo "=== $(basename "$f")"; grep -E "^(PASS|FAIL)|passed|failed|every step|side by side|^exit |^gpu_check" "$f"; done
} > "$OUT/summary.txt"
tar czf "$OUT/logs-$part.tgz" -C "$LOGS" --exclude='cache*' --exclude='site' --exclude='*.cubin' \
  --exclude='triton*' . 2>/dev/null
ls -la "$OUT"
