#!/usr/bin/env bash
# Device call 2 of run n (H100): order-1 tuple sizes that are not powers of two in flat
# tiles (blocked.orders_kernel's STRIDED path, new): their GPU tests, then the study grid
# `strided` (rows, caps, the padded tiles of runs j-m, the tile-local ceiling; the defaults
# checked against torch) and the grid `readers` (vector or word reads, one or per-order
# reductions); one tarball.
TUNING_CACHE=bench/results/2026-11-22-h100-g/call3/tuning-cache . bench/device_env.sh
timeout 150 python3 -m pytest tests/test_triton.py -n 16 -p no:cacheprovider -v --tb=short -rfE \
  -k "(test_blocked_orders and (q1-s3- or q1-s5- or q1-s7- or q1-s17-)) or status_stays or masked_columns_dispatch" \
  > "$W/gpu-tests.log" 2>&1
echo "tests: $((SECONDS - start)) s"; grep -E "FAILED|ERROR| passed| failed" "$W/gpu-tests.log" | tail -12
grep -c PASSED "$W/gpu-tests.log"
timeout 250 python3 bench/blocked_knobs_study.py --grid strided --json "$W/knobs-strided.json" 2>&1 | tail -50
echo "strided: $((SECONDS - start)) s"
timeout $((570 - SECONDS + start)) python3 bench/blocked_knobs_study.py --grid readers --json "$W/knobs-readers.json" 2>&1 | tail -30
echo "total: $((SECONDS - start)) s"
rm -rf "$W/tuning-cache"
tar czf "$OUT/n2.tgz" -C "$W" .
