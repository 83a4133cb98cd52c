#!/usr/bin/env bash
# Device call 5 of run j (H100): tuple sizes that are not powers of two in
# blocked.orders_kernel (tuples padded to the next power of two in a thread's row): register
# caps (study), then the blocked GPU tests over the whole (order, tuple size) grid; one tarball.
TUNING_CACHE=bench/results/2026-11-22-h100-g/call3/tuning-cache . bench/device_env.sh
timeout 100 python3 bench/blocked_knobs_study.py --grid padded --json "$W/knobs.json" 2>&1 | tail -30
echo "study: $((SECONDS - start)) s"
timeout 420 python3 -m pytest tests/test_triton.py -n 16 -p no:cacheprovider -v --tb=short -rfE \
  -k "blocked or order_tuple_grid or masked_columns_dispatch" > "$W/gpu-tests.log" 2>&1
echo "tests: $((SECONDS - start)) s"; grep -E "FAILED|ERROR| passed| failed" "$W/gpu-tests.log" | tail -12
grep -c PASSED "$W/gpu-tests.log"
rm -rf "$W/tuning-cache"
tar czf "$OUT/j5.tgz" -C "$W" .
