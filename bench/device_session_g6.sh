#!/usr/bin/env bash
# Device call 6 of run g (H100), with call 3's H100 table: the raking tests that call
# 5's time limit cut, the headline benchmark again (call 5's JSON did not come back),
# and issue 4's orders 2/5/8 and tuple sizes 2/5/8 with the peers; one tarball.
TUNING_CACHE=bench/results/2026-11-22-h100-g/call3/tuning-cache . bench/device_env.sh
timeout 140 python3 -m pytest tests/test_strategies.py -v -n 4 -p no:cacheprovider --tb=short -rfE \
  -k "raking and (chained-4 or decoupled_lookback-4 or scan_then_propagate-4 or persistent)" \
  > "$W/gpu-tests-raking.log" 2>&1
echo "raking tests: $((SECONDS - start)) s"; grep -E "FAILED|ERROR|passed|failed" "$W/gpu-tests-raking.log" | grep -v "::.* PASSED" | tail -6
timeout 100 python3 -m prefixscan bench --device cuda --sizes 10,20,24,27,28 --no-progress --out "$W/bench" 2>&1 | tail -1
for q in 2 5 8; do
  timeout 50 python3 -m prefixscan bench --device cuda --sizes 27 --dtypes int32,int64 --order $q --no-progress \
    --no-plot --out "$W/order$q" 2>&1 | tail -1
done
for s in 2 5 8; do
  timeout 50 python3 -m prefixscan bench --device cuda --sizes 27 --dtypes int32,int64 --tuple-size $s --no-progress \
    --no-plot --out "$W/tuple$s" 2>&1 | tail -1
done
grep -h "^| 2^\|^## " "$W"/order*/results.md "$W"/tuple*/results.md
echo "total: $((SECONDS - start)) s"
rm -rf "$W/tuning-cache"
tar czf "$OUT/g6.tgz" -C "$W" .
