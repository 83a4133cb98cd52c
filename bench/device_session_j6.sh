#!/usr/bin/env bash
# Device call 6 of run j (H100): the routing tests and padded-tuple GPU tests, the comparison
# with the general kernels (tuple sizes 3, 5, 7 added) plus a bitwise race check, and issue
# 4's tuple size 5 with the peers (orders and tuple sizes 2 / 8 route as in call 4); one tarball.
TUNING_CACHE=bench/results/2026-11-22-h100-g/call3/tuning-cache . bench/device_env.sh
timeout 100 python3 -m pytest tests/test_triton.py tests/test_tuner.py -n 16 -p no:cacheprovider -q --tb=short -rfE \
  -k "blocked_applies or masked_columns_dispatch or register_cap or occupancy_caps_the_registers or (blocked_orders and (s3 or s5 or s7 or s17))" \
  > "$W/gpu-tests.log" 2>&1
echo "tests: $((SECONDS - start)) s"; grep -E "FAILED|ERROR| passed| failed" "$W/gpu-tests.log" | tail -12
timeout 330 python3 bench/blocked_compare.py --repeats 3 --json "$W/compare.json" 2>&1 | tail -40
echo "compare: $((SECONDS - start)) s"
timeout 60 python3 -m prefixscan bench --device cuda --sizes 27 --dtypes int32,int64 --tuple-size 5 --no-progress \
  --no-plot --out "$W/tuple5" 2>&1 | tail -1
grep -h "^| 1\|^## " "$W"/tuple5/results.md
echo "total: $((SECONDS - start)) s"
rm -rf "$W/tuning-cache"
tar czf "$OUT/j6.tgz" -C "$W" .
