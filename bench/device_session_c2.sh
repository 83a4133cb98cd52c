#!/usr/bin/env bash
# Device call 2 of run c (~9 minutes): kernel tests touched since call 1, per-call
# profile, the main benchmark, orders and tuple sizes (issue 4) with their peers.
set -uo pipefail
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD PREFIXSCAN_AUTOTUNE=0
OUT=${OUT:-/tmp/prefixscan-out}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.mem --format=csv,noheader | tee "$OUT/gpu.txt"
timeout 200 python3 -m pytest tests/test_triton.py -q -n 12 -p no:cacheprovider \
  -k "replay or order or delta or builtin_ops or large or axes or reverse or exclusive" > "$OUT/gpu-tests-2.log" 2>&1
tail -4 "$OUT/gpu-tests-2.log"
timeout 40 python3 bench/percall_profile.py > "$OUT/percall-2.log" 2>&1; head -10 "$OUT/percall-2.log"
timeout 150 python3 -m prefixscan bench --device cuda --sizes 10,16,20,24,27,28,30 --no-progress \
  --out "$OUT/bench" 2>&1 | tail -2
for q in 2 5 8; do
  timeout 40 python3 -m prefixscan bench --device cuda --sizes 27 --dtypes int32,int64 --order $q --no-progress \
    --no-plot --out "$OUT/order$q" 2>&1 | tail -1
done
for s in 2 5 8; do
  timeout 60 python3 -m prefixscan bench --device cuda --sizes 27 --dtypes int32,int64 --tuple-size $s --no-progress \
    --no-plot --out "$OUT/tuple$s" 2>&1 | tail -1
done
grep -h "prefixscan\|copy\|torch" "$OUT"/order*/results.md "$OUT"/tuple*/results.md | head -60
