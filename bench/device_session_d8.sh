#!/usr/bin/env bash
# Device call 8 of run d: the 2-D look-back window scaled by 1/KB (window x KB status
# words per step, as the 1-D kernel's): GPU suites, then tuple sizes 2/4/8 and the
# (2^26, 4) axis-0 case with call 5's table.
set -uo pipefail
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD PREFIXSCAN_AUTOTUNE=0
OUT=${OUT:-/tmp/prefixscan-out}
W=$OUT/work; mkdir -p "$W"
cp -r bench/results/2026-11-21-h200-d/call5/tuning-cache "$W/tuning-cache"
export PREFIXSCAN_CACHE_DIR=$W/tuning-cache
start=$SECONDS
timeout 330 python3 -m pytest tests/test_triton.py tests/test_strategies.py -q -n 14 -p no:cacheprovider \
  --tb=short -rfE > "$W/gpu-tests-d8.log" 2>&1
echo "suites: $((SECONDS - start)) s"; grep -E "^FAILED|^ERROR|passed|failed" "$W/gpu-tests-d8.log" | tail -12
for s in 2 4 8; do
  timeout 40 python3 -m prefixscan bench --device cuda --sizes 27 --dtypes int32,int64 --tuple-size $s --no-progress \
    --no-plot --out "$W/tuple$s" 2>&1 | tail -1
done
timeout 40 python3 -m prefixscan bench --device cuda --sizes 28 --dtypes int32 --tuple-size 4 --no-progress \
  --no-plot --out "$W/axis0-2e26x4" 2>&1 | tail -1
grep -h "^| 2^\|^## " "$W"/tuple*/results.md "$W"/axis0*/results.md
tar czf "$OUT/d8.tgz" -C "$W" .
