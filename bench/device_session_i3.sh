#!/usr/bin/env bash
# Measures code kept in bench/results/2026-11-22-h100-i/persistent-kernel.patch (apply it first).
# Device call 3 of run i (H100): the persistent, software-pipelined blocked.orders_kernel
# (aggregate published when its data is in, look-back a step later, during the next copy): its GPU tests, the
# comparison with the general kernels plus a bitwise race check, and tiles with and
# without the look-back; one tarball.
TUNING_CACHE=bench/results/2026-11-22-h100-g/call3/tuning-cache . bench/device_env.sh
timeout 200 python3 -m pytest tests/test_triton.py -n 16 -p no:cacheprovider -q --tb=short -rfE \
  -k "blocked or order_tuple_grid or masked_columns_dispatch" > "$W/gpu-tests.log" 2>&1
echo "tests: $((SECONDS - start)) s"; grep -E "FAILED|ERROR|passed|failed" "$W/gpu-tests.log" | tail -12
timeout 170 python3 bench/blocked_compare.py --json "$W/compare.json" 2>&1 | tail -40
echo "compare: $((SECONDS - start)) s"
timeout 150 python3 bench/lookback_study.py --json "$W/tiles.json" 2>&1 | tail -40
echo "total: $((SECONDS - start)) s"
rm -rf "$W/tuning-cache"
tar czf "$OUT/i3.tgz" -C "$W" .
