#!/usr/bin/env bash
# One device call that checks and measures everything (at most ~9 minutes; a call may run 10):
#   device run: bash bench/device_session.sh   (writes under $OUT)
# GPU test suite (races, > 2^31 elements), per-call profile, the main benchmark, and the
# tile sweep with the axis-0 layout and reverse/exclusive/deterministic/affine variants.
# Fetch $OUT into bench/results/.
set -uo pipefail
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
OUT=${OUT:-/tmp/prefixscan-out}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.mem --format=csv,noheader | tee "$OUT/gpu.txt"
timeout 150 python3 -m pytest tests/test_triton.py -q -n 8 -p no:cacheprovider 2>&1 | tee "$OUT/gpu-tests.log" | tail -4
timeout 40 python3 bench/percall_profile.py > "$OUT/percall.log" 2>&1; head -12 "$OUT/percall.log"
timeout 140 python3 -m prefixscan bench --device cuda --sizes 10,13,16,20,22,24,26,27,28,30 --no-progress \
  --out "$OUT/bench" 2>&1 | tail -3
timeout 200 python3 bench/sweep.py --json "$OUT/sweep.json" 2>&1 | tee "$OUT/sweep.log" | grep -E "BEST|FAILED|VARIANT"
