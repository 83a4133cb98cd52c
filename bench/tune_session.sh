#!/usr/bin/env bash
# One device call that tunes the GPU scan and checks the tuned choice against every fixed one
# (issue 5, auto-tuner; at most ~8 minutes, a call may run 10):
#   device run: bash bench/tune_session.sh   (writes under $OUT)
# 1. prefixscan tune: built-in operators, int32/float32/int64/float64, 1-D and 2-D layouts,
#    the four size buckets (compiling ~16 tile variants per dtype and layout dominates).
# 2. bench/sweep.py --compare-tuned: per sweep case, the tuned choice against every fixed
#    tile of the sweep, the hand-measured default and chained, in 5 interleaved rounds.
# The table is written under $OUT/tuning-cache, so it comes back with the results.
# Fetch $OUT into bench/results/.
set -uo pipefail
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
OUT=${OUT:-/tmp/prefixscan-out}
export PREFIXSCAN_CACHE_DIR=$OUT/tuning-cache
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.mem --format=csv,noheader | tee "$OUT/gpu.txt"
start=$SECONDS
timeout ${TUNE_TIMEOUT:-330} python3 -m prefixscan tune --ops builtin --json "$OUT/tune.json" \
  > "$OUT/tune.log" 2>&1
echo "tune: exit $?, $((SECONDS - start)) s"; grep -v "^    excluded" "$OUT/tune.log" | tail -45
start=$SECONDS
timeout ${COMPARE_TIMEOUT:-200} python3 bench/sweep.py --compare-tuned --json "$OUT/compare.json" \
  > "$OUT/compare.log" 2>&1
echo "compare: exit $?, $((SECONDS - start)) s"; grep -E "^COMPARE|Error" "$OUT/compare.log"
