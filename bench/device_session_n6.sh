#!/usr/bin/env bash
# Device call 6 of run n (H100): the review commit (switches dropped, shared helpers): the blocked
# GPU tests, then the comparison with the general kernels and a race check over 2 repeats.
TUNING_CACHE=bench/results/2026-11-22-h100-g/call3/tuning-cache . bench/device_env.sh
timeout 400 python3 -m pytest tests/test_triton.py -n 16 -p no:cacheprovider -q --tb=short -rfE \
  -k "blocked or order_tuple_grid or masked_columns_dispatch" 2>&1 | tail -8
timeout 120 python3 bench/blocked_compare.py --repeats 2 --json "$OUT/compare.json" 2>&1 | tail -3
echo "total: $((SECONDS - start)) s"
