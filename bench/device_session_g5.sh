#!/usr/bin/env bash
# Device call 5 of run g (H100), with call 3's H100 table: the raking tests that
# call 4 failed (a test spy without the register-cap argument; out-of-memory with 16
# workers on the 80 GB card), the headline benchmark with peers (2^20, 2^27, 2^28,
# every dtype), per-call cost, the (2^26, 4) axis-0 case, and the race check.
TUNING_CACHE=bench/results/2026-11-22-h100-g/call3/tuning-cache . bench/device_env.sh
timeout 120 python3 -m pytest tests/test_strategies.py -k "raking or kernels_per_strategy" -v -n 4 \
  -p no:cacheprovider --tb=short -rfE > "$W/gpu-tests-raking.log" 2>&1
echo "raking tests: $((SECONDS - start)) s"; grep -E "FAILED|ERROR|passed|failed" "$W/gpu-tests-raking.log" | grep -v "::.* PASSED" | tail -6
timeout 150 python3 -m prefixscan bench --device cuda --sizes 20,27,28 --no-progress --out "$W/bench" 2>&1 | tail -1
grep -h "^| 2^\|^## " "$W"/bench/results.md
timeout 40 python3 bench/percall_profile.py > "$W/percall.log" 2>&1; head -12 "$W/percall.log"
timeout 60 python3 -m prefixscan bench --device cuda --sizes 28 --dtypes int32 --tuple-size 4 --no-progress \
  --no-plot --out "$W/axis0-2e26x4" 2>&1 | tail -1
grep -h "^| 2^\|^## " "$W"/axis0*/results.md
timeout 150 python3 bench/race_check.py --repeats 5 --json "$W/race.json" > "$W/race.log" 2>&1
echo "race: exit $?"; tail -4 "$W/race.log"
echo "total: $((SECONDS - start)) s"
rm -rf "$W/tuning-cache"
