#!/usr/bin/env bash
# Device call 4 of run g (H100): the whole GPU suites, with the H100 table of call 3
# (its register caps run wherever a scan takes the table's tile).
TUNING_CACHE=bench/results/2026-11-22-h100-g/call3/tuning-cache . bench/device_env.sh
timeout 575 python3 -m pytest tests/test_triton.py tests/test_strategies.py tests/test_compiled.py -v -n 16 \
  -p no:cacheprovider --tb=short -rfE > "$W/gpu-tests.log" 2>&1
echo "suites: $((SECONDS - start)) s"; grep -E "FAILED|ERROR|passed|failed" "$W/gpu-tests.log" | grep -v "::.* PASSED" | tail -12
rm -rf "$W/tuning-cache"
