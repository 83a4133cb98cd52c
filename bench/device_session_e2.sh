#!/usr/bin/env bash
# Device call 2 of run e: tagged 64-bit status words (kernels.WORDS).  The status
# study's variants compile in parallel with the GPU suites (nothing timed then),
# then the study is timed alone, then the library defaults are benchmarked.
set -uo pipefail
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD PREFIXSCAN_AUTOTUNE=0
OUT=${OUT:-/tmp/prefixscan-out}
W=$OUT/work; mkdir -p "$W"
cp -r bench/results/2026-11-21-h200-d/call5/tuning-cache "$W/tuning-cache"
export PREFIXSCAN_CACHE_DIR=$W/tuning-cache
nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.mem --format=csv,noheader | tee "$W/gpu.txt"
start=$SECONDS
for c in 0 1 2 3; do
  timeout 300 python3 bench/status_study.py --json /dev/null --case $c --compile-only > "$W/compile-$c.log" 2>&1 &
done
timeout 360 python3 -m pytest tests/test_triton.py tests/test_strategies.py tests/test_compiled.py -q -n 10 \
  -p no:cacheprovider --tb=short -rfE > "$W/gpu-tests-e2.log" 2>&1
wait
echo "suites + compiles: $((SECONDS - start)) s"; grep -E "^FAILED|^ERROR|passed|failed" "$W/gpu-tests-e2.log" | tail -20
tail -2 "$W"/compile-*.log | grep -i error
timeout 150 python3 bench/status_study.py --json "$W/status.json" 2>&1 | tee "$W/status.log"
for d in "int64,float64 --sizes 27" "int32,float32 --sizes 28"; do
  timeout 60 python3 -m prefixscan bench --device cuda --dtypes $d --no-progress --no-plot \
    --out "$W/bench-$(echo $d | cut -c1-5)" 2>&1 | tail -1
done
grep -h "^| 2^\|^## " "$W"/bench-*/results.md
echo "total: $((SECONDS - start)) s"
tar czf "$OUT/e2.tgz" -C "$W" .
