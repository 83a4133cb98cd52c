#!/usr/bin/env bash
# Device call 1 of run l (H100): look-back entries read as 16-byte vectors (entries a power
# of two of words apart) and one cross-warp reduction per fold decision and per window fold:
# the study's defaults against caps and long rows for tuples, then the blocked GPU tests.
TUNING_CACHE=bench/results/2026-11-22-h100-g/call3/tuning-cache . bench/device_env.sh
timeout 270 python3 bench/blocked_knobs_study.py --grid reader --json "$W/knobs.json" 2>&1 | tail -30
echo "study: $((SECONDS - start)) s"
timeout 290 python3 -m pytest tests/test_triton.py -n 16 -p no:cacheprovider -v --tb=short -rfE \
  -k "blocked or order_tuple_grid or masked_columns_dispatch" > "$W/gpu-tests.log" 2>&1
echo "tests: $((SECONDS - start)) s"; grep -E "FAILED|ERROR| passed| failed" "$W/gpu-tests.log" | tail -12
grep -c PASSED "$W/gpu-tests.log"
rm -rf "$W/tuning-cache"
tar czf "$OUT/l1.tgz" -C "$W" .
