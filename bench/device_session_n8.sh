#!/usr/bin/env bash
# Device call 8 of run n (H100): call 7's out-of-memory failures not in its first subset
# (q5 x s16/s17), rerun with 2 workers (kernels spilling ~21 KB per thread reserve local
# memory per process; 8-16 processes ran the 80 GB card out).
TUNING_CACHE=bench/results/2026-11-22-h100-g/call3/tuning-cache . bench/device_env.sh
timeout 250 python3 -m pytest tests/test_triton.py -n 2 -p no:cacheprovider -q --tb=line -rfE \
  -k "test_blocked_orders and (q5-s16 or q5-s17 or q8-s16 or q8-s17 or q8-s32 or q5-s32)" 2>&1 | grep -v "^\[gw\|Warning\|warner" | tail -6
echo "total: $((SECONDS - start)) s"
