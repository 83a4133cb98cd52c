#!/usr/bin/env bash
# Device call 7 of run n (H100): call 6's 41 failures (RuntimeError in the widest cases,
# q8 x s16-s32 int64 and the order/tuple grid, ~21 KB of stack per thread) rerun with 4
# workers instead of 16, with their messages; then the whole blocked set with 8 workers.
TUNING_CACHE=bench/results/2026-11-22-h100-g/call3/tuning-cache . bench/device_env.sh
timeout 200 python3 -m pytest tests/test_triton.py -n 4 -p no:cacheprovider -q --tb=line -rfE \
  -k "(test_blocked_orders and (q8-s16 or q8-s17 or q8-s32 or q5-s32)) or order_tuple_grid" 2>&1 | grep -v "^\[gw" | tail -15
timeout 330 python3 -m pytest tests/test_triton.py -n 8 -p no:cacheprovider -q --tb=line -rfE \
  -k "blocked or order_tuple_grid or masked_columns_dispatch" > "$OUT/gpu-tests.log" 2>&1
tail -5 "$OUT/gpu-tests.log"
echo "total: $((SECONDS - start)) s"
