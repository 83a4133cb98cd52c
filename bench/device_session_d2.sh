#!/usr/bin/env bash
# Device call 2 of run d: the chained and deterministic tests repeated (they had failed
# intermittently before status words were read by atomics), then the headline benchmark
# (does the atomic read cost anything?) and the strategy comparison with tuned chained tiles.
set -uo pipefail
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD PREFIXSCAN_AUTOTUNE=0
OUT=${OUT:-/tmp/prefixscan-out}
W=$OUT/work; mkdir -p "$W"
cp -r bench/results/2026-11-21-h200-c/call3/tuning-cache "$W/tuning-cache"
export PREFIXSCAN_CACHE_DIR=$W/tuning-cache
for i in 1 2 3 4 5; do
  timeout 70 python3 -m pytest tests/test_strategies.py tests/test_triton.py -q -n 8 -p no:cacheprovider \
    -k "chained or deterministic or layouts" --tb=line >> "$W/chained-repeats.log" 2>&1
  tail -1 "$W/chained-repeats.log"
done
timeout 100 python3 -m prefixscan bench --device cuda --sizes 20,27,28 --no-progress --out "$W/bench" 2>&1 | tail -1
grep -h "^| 2^\|^# \|^## " "$W"/bench/results.md
timeout 150 python3 -m prefixscan bench --device cuda --sizes 16,20,24,27 --dtypes int32 --strategies all \
  --no-progress --out "$W/strategies" 2>&1 | tail -1
grep -h -A8 "^## Strategies" "$W"/strategies/results.md
tar czf "$OUT/d2.tgz" -C "$W" .
