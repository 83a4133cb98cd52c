#!/usr/bin/env bash
# Device call 1 of run c (~8 minutes): GPU test suite, the int64 kernel study, the
# per-call profile.  Writes under $OUT.
set -uo pipefail
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD PREFIXSCAN_AUTOTUNE=0
OUT=${OUT:-/tmp/prefixscan-out}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.mem --format=csv,noheader | tee "$OUT/gpu.txt"
nproc
timeout 110 python3 bench/int64_study/device_exp.py --json "$OUT/int64_study.json" > "$OUT/int64_study.log" 2>&1
tail -30 "$OUT/int64_study.log"
timeout 50 python3 bench/percall_profile.py > "$OUT/percall.log" 2>&1; head -12 "$OUT/percall.log"
timeout 330 python3 -m pytest tests/test_triton.py -q -n 12 -p no:cacheprovider --durations=15 > "$OUT/gpu-tests.log" 2>&1
tail -25 "$OUT/gpu-tests.log"
