#!/usr/bin/env bash
# Device call 4 of run d: replay tests (a planned replay now re-plans after a tile override,
# which the tuner sets: in call 3 every decoupled look-back candidate had replayed the
# first tile), the race check, prefixscan tune again (candidates timed as a caller sees
# them: max of device time and back-to-back wall time per call), the headline benchmark.
set -uo pipefail
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD PREFIXSCAN_AUTOTUNE=0
OUT=${OUT:-/tmp/prefixscan-out}
W=$OUT/work; mkdir -p "$W"
cp -r bench/results/2026-11-21-h200-c/call3/tuning-cache "$W/old-tuning-cache"
nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.mem --format=csv,noheader | tee "$W/gpu.txt"
PREFIXSCAN_CACHE_DIR=$W/old-tuning-cache timeout 100 python3 -m pytest tests/test_triton.py tests/test_compiled.py \
  -q -p no:cacheprovider -k "replay or compiled" --tb=short -rfE > "$W/gpu-tests-d4.log" 2>&1
grep -E "^FAILED|^ERROR|passed|failed" "$W/gpu-tests-d4.log" | tail -5
start=$SECONDS
PREFIXSCAN_CACHE_DIR=$W/old-tuning-cache timeout 80 python3 bench/race_check.py --repeats 10 \
  --json "$W/race.json" > "$W/race.log" 2>&1
echo "race check: exit $?, $((SECONDS - start)) s"; grep -v "runs 0/" "$W/race.log" | tail -8
export PREFIXSCAN_CACHE_DIR=$W/tuning-cache
start=$SECONDS
timeout 290 python3 -m prefixscan tune --ops builtin --budget 270 --json "$W/tune.json" > "$W/tune.log" 2>&1
echo "tune: exit $?, $((SECONDS - start)) s"; grep -v "^    excluded" "$W/tune.log" | tail -36 | cut -c1-120
timeout 100 python3 -m prefixscan bench --device cuda --sizes 20,27,28 --no-progress --out "$W/bench" 2>&1 | tail -1
grep -h "^| 2^\|^## " "$W"/bench/results.md
tar czf "$OUT/d4.tgz" -C "$W" .
