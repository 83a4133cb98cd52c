#!/usr/bin/env bash
# Device call 3 of run k (H100): padded tuples' look-back entries without their padding
# columns, and look-back windows for wide entries (study), then the blocked GPU tests of
# tuple sizes (padded ones included); one tarball.
TUNING_CACHE=bench/results/2026-11-22-h100-g/call3/tuning-cache . bench/device_env.sh
timeout 150 python3 bench/blocked_knobs_study.py --grid wide --json "$W/knobs.json" 2>&1 | tail -40
echo "study: $((SECONDS - start)) s"
timeout 380 python3 -m pytest tests/test_triton.py -n 16 -p no:cacheprovider -v --tb=short -rfE \
  -k "blocked_orders and not s1-" > "$W/gpu-tests.log" 2>&1
echo "tests: $((SECONDS - start)) s"; grep -E "FAILED|ERROR| passed| failed" "$W/gpu-tests.log" | tail -12
grep -c PASSED "$W/gpu-tests.log"
rm -rf "$W/tuning-cache"
tar czf "$OUT/k3.tgz" -C "$W" .
