#!/usr/bin/env bash
# Device call 4 of run h (H100): the look-back of blocked.orders_kernel in two round
# trips (probe the entries' first words over 32 entries, then fetch what folds): where the
# time goes (bench/lookback_study.py), the comparison with the general kernels and race
# check (bench/blocked_compare.py), and the GPU tests of the blocked kernel.
TUNING_CACHE=bench/results/2026-11-22-h100-g/call3/tuning-cache . bench/device_env.sh
timeout 100 python3 bench/lookback_study.py --json "$W/lookback.json" 2>&1 | grep ratio \
  | sed 's/.ratio_to_copy.: \([0-9.]\{4\}\)[0-9]*/r=\1/'
echo "study: $((SECONDS - start)) s"
timeout 150 python3 bench/blocked_compare.py --json "$W/compare.json" 2>&1 | tail -30
echo "compare: $((SECONDS - start)) s"
timeout 170 python3 -m pytest tests/test_triton.py -n 8 -p no:cacheprovider -q --tb=short -rfE \
  -k "blocked" > "$W/gpu-tests.log" 2>&1
echo "tests: $((SECONDS - start)) s"; grep -E "FAILED|ERROR|passed|failed" "$W/gpu-tests.log" | tail -12
rm -rf "$W/tuning-cache"
tar czf "$OUT/h3.tgz" -C "$W" .
