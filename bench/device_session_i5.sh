#!/usr/bin/env bash
# Measures code kept in bench/results/2026-11-22-h100-i/one-round-trip.patch (apply it first).
# Device call 5 of run i (H100): blocked.orders_kernel (non-persistent again) with
# look-back steps of one round trip for entries of at most 16 words: the look-back study
# (one against two round trips, and none), the comparison with the general kernels plus
# a bitwise race check, the blocked GPU tests; one tarball.
TUNING_CACHE=bench/results/2026-11-22-h100-g/call3/tuning-cache . bench/device_env.sh
timeout 130 python3 bench/lookback_study.py --json "$W/roundtrips.json" 2>&1 | tail -40
echo "study: $((SECONDS - start)) s"
timeout 140 python3 bench/blocked_compare.py --json "$W/compare.json" 2>&1 | tail -40
echo "compare: $((SECONDS - start)) s"
timeout 150 python3 -m pytest tests/test_triton.py -n 16 -p no:cacheprovider -v --tb=short -rfE \
  -k "blocked or masked_columns_dispatch" > "$W/gpu-tests.log" 2>&1
echo "tests: $((SECONDS - start)) s"; grep -E "FAILED|ERROR| passed| failed" "$W/gpu-tests.log" | tail -12
grep -c PASSED "$W/gpu-tests.log"
rm -rf "$W/tuning-cache"
tar czf "$OUT/i5.tgz" -C "$W" .
