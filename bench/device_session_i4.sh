#!/usr/bin/env bash
# Measures code kept in bench/results/2026-11-22-h100-i/persistent-kernel.patch (apply it first).
# Device call 4 of run i (H100): the persistent blocked.orders_kernel taking the next id
# only after the current tile's inclusive prefix is out (its copy flies while the current
# tile is written): GPU tests (verbose, to name failures), the comparison with the
# general kernels plus a bitwise race check; one tarball.
TUNING_CACHE=bench/results/2026-11-22-h100-g/call3/tuning-cache . bench/device_env.sh
timeout 170 python3 bench/blocked_compare.py --json "$W/compare.json" 2>&1 | tail -40
echo "compare: $((SECONDS - start)) s"
timeout 200 python3 -m pytest tests/test_triton.py -n 16 -p no:cacheprovider -v --tb=short -rfE \
  -k "blocked or order_tuple_grid or masked_columns_dispatch" > "$W/gpu-tests.log" 2>&1
echo "tests: $((SECONDS - start)) s"; grep -E "FAILED|ERROR| passed| failed" "$W/gpu-tests.log" | tail -12
grep -c PASSED "$W/gpu-tests.log"
rm -rf "$W/tuning-cache"
tar czf "$OUT/i4.tgz" -C "$W" .
