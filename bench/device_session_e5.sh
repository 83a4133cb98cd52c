#!/usr/bin/env bash
# Device call 5 of run e: the GPU suites and the race check (int32 and int64 cases,
# every strategy) with call 4's table.
set -uo pipefail
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD PREFIXSCAN_AUTOTUNE=0
OUT=${OUT:-/tmp/prefixscan-out}
W=$OUT/work; mkdir -p "$W"
cp -r bench/results/2026-11-22-h200-e/call4/tuning-cache "$W/tuning-cache"
export PREFIXSCAN_CACHE_DIR=$W/tuning-cache
start=$SECONDS
timeout 420 python3 -m pytest tests/test_triton.py tests/test_strategies.py tests/test_compiled.py -q -n 14 \
  -p no:cacheprovider --tb=short -rfE > "$W/gpu-tests-e5.log" 2>&1
echo "suites: $((SECONDS - start)) s"; grep -E "^FAILED|^ERROR|passed|failed" "$W/gpu-tests-e5.log" | tail -20
timeout 150 python3 bench/race_check.py --repeats 10 --json "$W/race.json" > "$W/race.log" 2>&1
echo "race: exit $?"; tail -16 "$W/race.log"
echo "total: $((SECONDS - start)) s"
tar czf "$OUT/e5.tgz" -C "$W" .
