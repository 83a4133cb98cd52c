#!/usr/bin/env bash
# Device call 6 of run e: the headline benchmark with call 4's table (sizes 2^20,
# 2^27, 2^28, every dtype, plot), per-call cost, orders 2/5/8 and tuple sizes 2/5/8
# (issue 4) and the (2^26, 4) axis-0 case.
set -uo pipefail
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD PREFIXSCAN_AUTOTUNE=0
OUT=${OUT:-/tmp/prefixscan-out}
W=$OUT/work; mkdir -p "$W"
cp -r bench/results/2026-11-22-h200-e/call4/tuning-cache "$W/tuning-cache"
export PREFIXSCAN_CACHE_DIR=$W/tuning-cache
nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.mem --format=csv,noheader | tee "$W/gpu.txt"
start=$SECONDS
timeout 110 python3 -m prefixscan bench --device cuda --sizes 20,27,28 --no-progress --out "$W/bench" 2>&1 | tail -1
grep -h "^| 2^\|^## " "$W"/bench/results.md
timeout 40 python3 bench/percall_profile.py > "$W/percall.log" 2>&1; head -12 "$W/percall.log"
for q in 2 5 8; do
  timeout 45 python3 -m prefixscan bench --device cuda --sizes 27 --dtypes int32,int64 --order $q --no-progress \
    --no-plot --out "$W/order$q" 2>&1 | tail -1
done
for s in 2 5 8; do
  timeout 45 python3 -m prefixscan bench --device cuda --sizes 27 --dtypes int32,int64 --tuple-size $s --no-progress \
    --no-plot --out "$W/tuple$s" 2>&1 | tail -1
done
timeout 45 python3 -m prefixscan bench --device cuda --sizes 28 --dtypes int32 --tuple-size 4 --no-progress \
  --no-plot --out "$W/axis0-2e26x4" 2>&1 | tail -1
grep -h "^| 2^\|^## " "$W"/order*/results.md "$W"/tuple*/results.md "$W"/axis0*/results.md
echo "total: $((SECONDS - start)) s"
tar czf "$OUT/e6.tgz" -C "$W" .
