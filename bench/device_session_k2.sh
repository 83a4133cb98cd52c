#!/usr/bin/env bash
# Device call 2 of run k (H100): blocked.orders_kernel's defaults (rows twice as long for
# high orders, caps for padded int32 tuples only) against rows of the other length, whole
# or in 2 chunks, and caps for tuples (study), then the blocked GPU tests of 1-D orders
# (the new tiles), chunks and launch rules; one tarball.
TUNING_CACHE=bench/results/2026-11-22-h100-g/call3/tuning-cache . bench/device_env.sh
timeout 200 python3 bench/blocked_knobs_study.py --grid rows --json "$W/knobs.json" 2>&1 | tail -90
echo "study: $((SECONDS - start)) s"
timeout 330 python3 -m pytest tests/test_triton.py -n 16 -p no:cacheprovider -v --tb=short -rfE \
  -k "row_chunks or register_cap or tile_rows or single_tile or (blocked_orders and s1-)" \
  > "$W/gpu-tests.log" 2>&1
echo "tests: $((SECONDS - start)) s"; grep -E "FAILED|ERROR| passed| failed" "$W/gpu-tests.log" | tail -12
grep -c PASSED "$W/gpu-tests.log"
rm -rf "$W/tuning-cache"
tar czf "$OUT/k2.tgz" -C "$W" .
