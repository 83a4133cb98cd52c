#!/usr/bin/env bash
# Device call 5 of run c: the GPU suites with a failure summary (call 4 ran out of time
# before printing it), then the strategy comparison again (reduce_then_scan fixed).
set -uo pipefail
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD PREFIXSCAN_AUTOTUNE=0
OUT=${OUT:-/tmp/prefixscan-out}
W=$OUT/work; mkdir -p "$W"
cp -r bench/results/2026-11-21-h200-c/call3/tuning-cache "$W/tuning-cache"
export PREFIXSCAN_CACHE_DIR=$W/tuning-cache
timeout 380 python3 -m pytest tests/test_triton.py tests/test_strategies.py -q -n 14 -p no:cacheprovider \
  -p no:benchmark --tb=short -rfE > "$W/gpu-tests-5.log" 2>&1
grep -E "^FAILED|^ERROR|passed|failed" "$W/gpu-tests-5.log" | tail -30
timeout 150 python3 -m prefixscan bench --device cuda --sizes 16,20,24,27 --dtypes int32 --strategies all \
  --no-progress --out "$W/strategies" 2>&1 | tail -1
grep -h -A8 "^## Strategies" "$W"/strategies/results.md
tar czf "$OUT/c5.tgz" -C "$W" .
