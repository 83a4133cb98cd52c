#!/usr/bin/env bash
# Device call 4 of run e: re-tune with the tagged 64-bit status words (the look-back
# window now counts words per step), then benchmark 1-D with the new table.
set -uo pipefail
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
OUT=${OUT:-/tmp/prefixscan-out}
W=$OUT/work; mkdir -p "$W"
export PREFIXSCAN_CACHE_DIR=$W/tuning-cache
nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.mem --format=csv,noheader | tee "$W/gpu.txt"
start=$SECONDS
timeout 420 python3 -m prefixscan tune --ops builtin --budget 380 --json "$W/tune.json" > "$W/tune.log" 2>&1
echo "tune: exit $?, $((SECONDS - start)) s"; grep -v "^    excluded" "$W/tune.log" | tail -40
export PREFIXSCAN_AUTOTUNE=0
for d in "int64,float64 --sizes 27" "int32,float32 --sizes 28"; do
  timeout 60 python3 -m prefixscan bench --device cuda --dtypes $d --no-progress --no-plot \
    --out "$W/bench-$(echo $d | cut -c1-5)" 2>&1 | tail -1
done
grep -h "^| 2^\|^## " "$W"/bench-*/results.md
echo "total: $((SECONDS - start)) s"
tar czf "$OUT/e4.tgz" -C "$W" .
