#!/usr/bin/env bash
# Device call 1 of run k (H100): blocked.orders_kernel with seeds entering a row's first
# element only, the tile copied into shared memory asynchronously (cp.async: no registers),
# padded tuples' addresses recomputed for the store, rows in chunks: the study
# (caps, tile-local ceiling, chunked long rows), then the chunk tests and blocked tests of
# the orders and padded tuples it touches; one tarball.
TUNING_CACHE=bench/results/2026-11-22-h100-g/call3/tuning-cache . bench/device_env.sh
timeout 300 python3 bench/blocked_knobs_study.py --grid chunks --json "$W/knobs.json" 2>&1 | tail -90
echo "study: $((SECONDS - start)) s"
timeout 240 python3 -m pytest tests/test_triton.py -n 16 -p no:cacheprovider -v --tb=short -rfE \
  -k "row_chunks or (blocked_orders and (q8-s1 or q5-s1 or q1-s5 or q2-s5 or q1-s3 or q1-s8 or q3-s3))" \
  > "$W/gpu-tests.log" 2>&1
echo "tests: $((SECONDS - start)) s"; grep -E "FAILED|ERROR| passed| failed" "$W/gpu-tests.log" | tail -12
grep -c PASSED "$W/gpu-tests.log"
rm -rf "$W/tuning-cache"
tar czf "$OUT/k1.tgz" -C "$W" .
