#!/usr/bin/env bash
# Device call 1 of run d: the GPU suites with the H200 tuned table and chained scans on
# tuned tiles again (status words now read by atomics, see kernels._read_word), then
# the chained layouts test repeated (it had failed intermittently), all in $OUT/d1.tgz.
set -uo pipefail
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD PREFIXSCAN_AUTOTUNE=0
OUT=${OUT:-/tmp/prefixscan-out}
W=$OUT/work; mkdir -p "$W"
cp -r bench/results/2026-11-21-h200-c/call3/tuning-cache "$W/tuning-cache"
export PREFIXSCAN_CACHE_DIR=$W/tuning-cache
nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.mem --format=csv,noheader | tee "$W/gpu.txt"
start=$SECONDS
timeout 400 python3 -m pytest tests/test_triton.py tests/test_strategies.py tests/test_compiled.py -q -n 14 \
  -p no:cacheprovider --tb=short -rfE > "$W/gpu-tests-d1.log" 2>&1
echo "suites: $((SECONDS - start)) s"; grep -E "^FAILED|^ERROR|passed|failed" "$W/gpu-tests-d1.log" | tail -30
for i in 1 2 3 4 5 6 7 8; do
  timeout 60 python3 -m pytest tests/test_strategies.py -q -p no:cacheprovider -k "chained" --tb=line \
    >> "$W/chained-repeats.log" 2>&1
  tail -1 "$W/chained-repeats.log"
done
tar czf "$OUT/d1.tgz" -C "$W" .
