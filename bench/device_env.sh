# Sourced by the device session scripts of runs f and g: environment, output folder $W,
# a tuned table as the tuning cache ($TUNING_CACHE, default run e's H200 table, none: empty; a
# table is named after its GPU, so another GPU's is ignored), the GPU's name, a clock ($start).
set -uo pipefail
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD PREFIXSCAN_AUTOTUNE=0
OUT=${OUT:-/tmp/prefixscan-out}
W=$OUT/work; mkdir -p "$W"
if [ "${TUNING_CACHE:-}" = none ]; then  # start from no table (a tuning run)
  mkdir -p "$W/tuning-cache"
else
  cp -r "${TUNING_CACHE:-bench/results/2026-11-22-h200-e/call4/tuning-cache}" "$W/tuning-cache"
fi
export PREFIXSCAN_CACHE_DIR=$W/tuning-cache
nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.mem --format=csv,noheader | tee "$W/gpu.txt"
start=$SECONDS
