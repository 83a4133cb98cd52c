#!/usr/bin/env bash
# Device call 3 of run n (H100): flat tiles for order-1 tuple sizes that are not powers of
# two (rows of 512 bytes), partial tiles in rows (no spills at lengths not a multiple of
# 16): the blocked GPU tests, then issue 4's orders and tuple sizes with the peers; one tarball.
TUNING_CACHE=bench/results/2026-11-22-h100-g/call3/tuning-cache . bench/device_env.sh
timeout 330 python3 -m pytest tests/test_triton.py -n 16 -p no:cacheprovider -v --tb=short -rfE \
  -k "blocked or order_tuple_grid or masked_columns_dispatch" > "$W/gpu-tests.log" 2>&1
echo "tests: $((SECONDS - start)) s"; grep -E "FAILED|ERROR| passed| failed" "$W/gpu-tests.log" | tail -12
grep -c PASSED "$W/gpu-tests.log"
. bench/issue4_bench.sh  # (as run: the same loop written out, 45 s / 40 s per case)
echo "total: $((SECONDS - start)) s"
rm -rf "$W/tuning-cache"
tar czf "$OUT/n3.tgz" -C "$W" .
