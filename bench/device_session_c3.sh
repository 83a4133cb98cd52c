#!/usr/bin/env bash
# Device call 3 of run c (~9 minutes): replay test, per-call profile, prefixscan tune
# (built-in operators, table under $OUT), then the benchmarks with the tuned table:
# headline sizes, orders 2/5/8 and tuple sizes 2/4/5/8 (tuple size 4 at 2^28 int32 is
# the (2^26, 4) axis-0 case).  Everything is packed into $OUT/c3.tgz (one file back).
set -uo pipefail
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
OUT=${OUT:-/tmp/prefixscan-out}
W=$OUT/work; mkdir -p "$W"
export PREFIXSCAN_CACHE_DIR=$W/tuning-cache
nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.mem --format=csv,noheader | tee "$W/gpu.txt"
PREFIXSCAN_AUTOTUNE=0 timeout 60 python3 -m pytest tests/test_triton.py -q -p no:cacheprovider -k "replay or large" \
  > "$W/gpu-tests-3.log" 2>&1; tail -2 "$W/gpu-tests-3.log"
PREFIXSCAN_AUTOTUNE=0 timeout 40 python3 bench/percall_profile.py > "$W/percall-3.log" 2>&1; head -10 "$W/percall-3.log"
start=$SECONDS
timeout 250 python3 -m prefixscan tune --ops builtin --budget 230 --json "$W/tune.json" > "$W/tune.log" 2>&1
echo "tune: exit $?, $((SECONDS - start)) s"; grep -v "^    excluded" "$W/tune.log" | tail -40
export PREFIXSCAN_AUTOTUNE=0
timeout 90 python3 -m prefixscan bench --device cuda --sizes 20,27,28 --no-progress --out "$W/bench" 2>&1 | tail -1
for q in 2 5 8; do
  timeout 40 python3 -m prefixscan bench --device cuda --sizes 27 --dtypes int32,int64 --order $q --no-progress \
    --no-plot --out "$W/order$q" 2>&1 | tail -1
done
for s in 2 4 5 8; do
  timeout 45 python3 -m prefixscan bench --device cuda --sizes 27 --dtypes int32,int64 --tuple-size $s --no-progress \
    --no-plot --out "$W/tuple$s" 2>&1 | tail -1
done
grep -h "^| 2^\|^# \|^## " "$W"/bench/results.md "$W"/order*/results.md "$W"/tuple*/results.md
tar czf "$OUT/c3.tgz" -C "$W" .
