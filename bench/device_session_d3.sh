#!/usr/bin/env bash
# Device call 3 of run d: races (every strategy, repeated, with run c's tuned table, under
# which chained 2-D once failed), then prefixscan tune for the changed kernels (status read
# by atomics; every strategy a candidate, deterministic ones too), then the headline
# benchmark with the new table.  Everything in $OUT/d3.tgz.
set -uo pipefail
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD PREFIXSCAN_AUTOTUNE=0
OUT=${OUT:-/tmp/prefixscan-out}
W=$OUT/work; mkdir -p "$W"
cp -r bench/results/2026-11-21-h200-c/call3/tuning-cache "$W/old-tuning-cache"
nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.mem --format=csv,noheader | tee "$W/gpu.txt"
start=$SECONDS
PREFIXSCAN_CACHE_DIR=$W/old-tuning-cache timeout 170 python3 bench/race_check.py --repeats 20 \
  --json "$W/race.json" > "$W/race.log" 2>&1
echo "race check: exit $?, $((SECONDS - start)) s"; cat "$W/race.log" | tail -22
export PREFIXSCAN_CACHE_DIR=$W/tuning-cache
start=$SECONDS
timeout 260 python3 -m prefixscan tune --ops builtin --budget 240 --json "$W/tune.json" > "$W/tune.log" 2>&1
echo "tune: exit $?, $((SECONDS - start)) s"; grep -v "^    excluded" "$W/tune.log" | tail -36
timeout 110 python3 -m prefixscan bench --device cuda --sizes 20,27,28 --no-progress --out "$W/bench" 2>&1 | tail -1
grep -h "^| 2^\|^## " "$W"/bench/results.md
tar czf "$OUT/d3.tgz" -C "$W" .
