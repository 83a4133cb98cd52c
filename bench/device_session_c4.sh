#!/usr/bin/env bash
# Device call 4 of run c (~9 minutes): GPU suites after merging the strategies and the
# tuner (kernels, strategies, tuner), per-call profile, small sizes with per-call
# times (multi-tile replay), the strategy comparison (issue 5) and the tuned choice
# against every fixed tile, using call 3's tuning table.  One archive back: $OUT/c4.tgz.
set -uo pipefail
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD PREFIXSCAN_AUTOTUNE=0
OUT=${OUT:-/tmp/prefixscan-out}
W=$OUT/work; mkdir -p "$W"
cp -r bench/results/2026-11-21-h200-c/call3/tuning-cache "$W/tuning-cache"
export PREFIXSCAN_CACHE_DIR=$W/tuning-cache
nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.mem --format=csv,noheader | tee "$W/gpu.txt"
timeout 200 python3 -m pytest tests/test_triton.py tests/test_strategies.py tests/test_tuner.py -q -n 12 \
  -p no:cacheprovider > "$W/gpu-tests-4.log" 2>&1; tail -6 "$W/gpu-tests-4.log"
timeout 40 python3 bench/percall_profile.py > "$W/percall-4.log" 2>&1; head -10 "$W/percall-4.log"
timeout 60 python3 -m prefixscan bench --device cuda --sizes 10,16,20 --no-progress --out "$W/small" 2>&1 | tail -1
timeout 150 python3 -m prefixscan bench --device cuda --sizes 16,20,24,27 --dtypes int32 --strategies all \
  --no-progress --out "$W/strategies" 2>&1 | tail -1
timeout 100 python3 bench/sweep.py --compare-tuned --json "$W/compare.json" > "$W/compare.log" 2>&1
grep -E "^COMPARE|Error" "$W/compare.log" | head -20
grep -h "^| \|^## " "$W"/small/results.md "$W"/strategies/results.md | head -60
tar czf "$OUT/c4.tgz" -C "$W" .
