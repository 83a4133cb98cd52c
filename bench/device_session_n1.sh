#!/usr/bin/env bash
# Device call 1 of run n (H100): the kernel of the lost runs l and m (look-back entries read
# as 16-byte vectors, one cross-warp reduction per fold, int64 tuples of 8 columns in long
# rows and routed to this kernel, status buffer sized for the entry spacing): the blocked GPU
# tests, issue 4's orders and tuple sizes with the peers, then the comparison with the general
# kernels and a bitwise race check over 3 repeats; one tarball.
TUNING_CACHE=bench/results/2026-11-22-h100-g/call3/tuning-cache . bench/device_env.sh
timeout 280 python3 -m pytest tests/test_triton.py -n 16 -p no:cacheprovider -v --tb=short -rfE \
  -k "blocked or order_tuple_grid or masked_columns_dispatch" > "$W/gpu-tests.log" 2>&1
echo "tests: $((SECONDS - start)) s"; grep -E "FAILED|ERROR| passed| failed" "$W/gpu-tests.log" | tail -12
grep -c PASSED "$W/gpu-tests.log"
. bench/issue4_bench.sh  # (as run: the same loop written out, 45 s / 40 s per case)
echo "bench: $((SECONDS - start)) s"
timeout $((585 - SECONDS + start)) python3 bench/blocked_compare.py --repeats 3 --json "$W/compare.json" 2>&1 | tail -45
echo "total: $((SECONDS - start)) s"
rm -rf "$W/tuning-cache"
tar czf "$OUT/n1.tgz" -C "$W" .
