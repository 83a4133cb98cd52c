#!/usr/bin/env bash
# Device call 6 of run k (H100): status entries published one word per lane (the tile's
# words through a shared-memory stash) instead of one atomic after another from the last
# thread: the defaults on the wide-entry cases (study), the blocked GPU tests, then the
# comparison with the general kernels and a bitwise race check over 3 repeats; one tarball.
TUNING_CACHE=bench/results/2026-11-22-h100-g/call3/tuning-cache . bench/device_env.sh
timeout 90 python3 bench/blocked_knobs_study.py --grid defaults --json "$W/knobs.json" 2>&1 | tail -20
echo "study: $((SECONDS - start)) s"
timeout 280 python3 -m pytest tests/test_triton.py -n 16 -p no:cacheprovider -v --tb=short -rfE \
  -k "blocked or order_tuple_grid or masked_columns_dispatch" > "$W/gpu-tests.log" 2>&1
echo "tests: $((SECONDS - start)) s"; grep -E "FAILED|ERROR| passed| failed" "$W/gpu-tests.log" | tail -12
grep -c PASSED "$W/gpu-tests.log"
timeout 200 python3 bench/blocked_compare.py --repeats 3 --json "$W/compare.json" 2>&1 | tail -40
echo "total: $((SECONDS - start)) s"
rm -rf "$W/tuning-cache"
tar czf "$OUT/k6.tgz" -C "$W" .
