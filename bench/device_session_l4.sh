#!/usr/bin/env bash
# Device call 4 of run l (H100): the status buffer sized for the new entry spacing (calls
# 1-3 under-reserved it: tile 0 of int32 order 8 tuple size 17 got status words), int64
# tuples of 8 columns in long rows: the blocked GPU tests, caps for long padded rows, then
# the comparison with the general kernels and a bitwise race check over 3 repeats.
TUNING_CACHE=bench/results/2026-11-22-h100-g/call3/tuning-cache . bench/device_env.sh
timeout 290 python3 -m pytest tests/test_triton.py -n 16 -p no:cacheprovider -v --tb=short -rfE \
  -k "blocked or order_tuple_grid or masked_columns_dispatch" > "$W/gpu-tests.log" 2>&1
echo "tests: $((SECONDS - start)) s"; grep -E "FAILED|ERROR| passed| failed" "$W/gpu-tests.log" | tail -12
grep -c PASSED "$W/gpu-tests.log"
timeout 60 python3 bench/blocked_knobs_study.py --grid caps --json "$W/knobs.json" 2>&1 | tail -10
timeout 200 python3 bench/blocked_compare.py --repeats 3 --json "$W/compare.json" 2>&1 | tail -40
echo "total: $((SECONDS - start)) s"
rm -rf "$W/tuning-cache"
tar czf "$OUT/l4.tgz" -C "$W" .
