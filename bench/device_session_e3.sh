#!/usr/bin/env bash
# Device call 3 of run e: 64-bit status words read in one atomic (not one round
# trip per word), relaxed tile tickets.  Status study (words vs flags, windows),
# the int64 race test, then the library defaults benchmarked.
set -uo pipefail
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD PREFIXSCAN_AUTOTUNE=0
OUT=${OUT:-/tmp/prefixscan-out}
W=$OUT/work; mkdir -p "$W"
cp -r bench/results/2026-11-21-h200-d/call5/tuning-cache "$W/tuning-cache"
export PREFIXSCAN_CACHE_DIR=$W/tuning-cache
start=$SECONDS
timeout 100 python3 -m pytest tests/test_triton.py -q -p no:cacheprovider -k "repeated_large or status_words" \
  --tb=short -rfE 2>&1 | tail -2
timeout 300 python3 bench/status_study.py --json "$W/status-1d.json" --cases int64:27:1,float64:27:1 \
  --tiles 4096x4x32,8192x4x32,8192x4x16,4096x4x16 2>&1 | tee "$W/status-1d.log"
timeout 150 python3 bench/status_study.py --json "$W/status-2d.json" --cases int32:28:4,int64:27:4 --protocols words \
  --tiles 8192x4x32,16384x4x32,8192x4x64 2>&1 | tee "$W/status-2d.log"
for d in "int64,float64 --sizes 27" "int32 --sizes 28"; do
  timeout 60 python3 -m prefixscan bench --device cuda --dtypes $d --no-progress --no-plot \
    --out "$W/bench-$(echo $d | cut -c1-5)" 2>&1 | tail -1
done
grep -h "^| 2^\|^## " "$W"/bench-*/results.md
echo "total: $((SECONDS - start)) s"
tar czf "$OUT/e3.tgz" -C "$W" .
