#!/usr/bin/env bash
# Device call 6 of run d: orders 2/5/8 and tuple sizes 2/4/5/8 (int32, int64, n = 2^27)
# and the (2^26, 4) axis-0 case (tuple size 4 at 2^28 int32) with call 5's table.
set -uo pipefail
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD PREFIXSCAN_AUTOTUNE=0
OUT=${OUT:-/tmp/prefixscan-out}
W=$OUT/work; mkdir -p "$W"
cp -r bench/results/2026-11-21-h200-d/call5/tuning-cache "$W/tuning-cache"
export PREFIXSCAN_CACHE_DIR=$W/tuning-cache
for q in 2 5 8; do
  timeout 45 python3 -m prefixscan bench --device cuda --sizes 27 --dtypes int32,int64 --order $q --no-progress \
    --no-plot --out "$W/order$q" 2>&1 | tail -1
done
for s in 2 4 5 8; do
  timeout 45 python3 -m prefixscan bench --device cuda --sizes 27 --dtypes int32,int64 --tuple-size $s --no-progress \
    --no-plot --out "$W/tuple$s" 2>&1 | tail -1
done
timeout 45 python3 -m prefixscan bench --device cuda --sizes 28 --dtypes int32 --tuple-size 4 --no-progress \
  --no-plot --out "$W/axis0-2e26x4" 2>&1 | tail -1
grep -h "^| 2^\|^# \|^## " "$W"/order*/results.md "$W"/tuple*/results.md "$W"/axis0*/results.md | grep -v "^# "
tar czf "$OUT/d6.tgz" -C "$W" .
