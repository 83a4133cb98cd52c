#!/usr/bin/env bash
# Device call 5 of run d: the small-size buckets re-tuned with the blended score (mean of
# device and waited time), merged into call 4's table; then with that table the headline
# benchmark, per-call times, and the strategy comparison (with deterministic=True's cost).
set -uo pipefail
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD PREFIXSCAN_AUTOTUNE=0
OUT=${OUT:-/tmp/prefixscan-out}
W=$OUT/work; mkdir -p "$W"
cp -r bench/results/2026-11-21-h200-d/call4/tuning-cache "$W/tuning-cache"
export PREFIXSCAN_CACHE_DIR=$W/tuning-cache
nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.mem --format=csv,noheader | tee "$W/gpu.txt"
start=$SECONDS
timeout 150 python3 -m prefixscan tune --ops builtin --sizes 16,20 --budget 130 --json "$W/tune-small.json" \
  > "$W/tune-small.log" 2>&1
echo "tune: exit $?, $((SECONDS - start)) s"; grep -v "^    excluded" "$W/tune-small.log" | tail -18 | cut -c1-120
timeout 100 python3 -m prefixscan bench --device cuda --sizes 20,27,28 --no-progress --out "$W/bench" 2>&1 | tail -1
grep -h "^| 2^\|^## " "$W"/bench/results.md
timeout 40 python3 bench/percall_profile.py > "$W/percall.log" 2>&1; head -12 "$W/percall.log"
timeout 170 python3 -m prefixscan bench --device cuda --sizes 16,20,24,27 --dtypes int32,float32 --strategies all \
  --no-progress --out "$W/strategies" 2>&1 | tail -1
grep -h "^| 2^27\|^## \|^### " "$W"/strategies/results.md | cut -c1-200
tar czf "$OUT/d5.tgz" -C "$W" .
