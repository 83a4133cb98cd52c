#!/usr/bin/env bash
# Device call 6 of run f: the whole GPU suites of the final kernels, with time to finish.
. bench/device_env.sh
timeout 570 python3 -m pytest tests/test_triton.py tests/test_strategies.py tests/test_compiled.py -v -n 16 \
  -p no:cacheprovider --tb=short -rfE > "$W/gpu-tests.log" 2>&1
echo "suites: $((SECONDS - start)) s"; grep -E "FAILED|ERROR|passed|failed" "$W/gpu-tests.log" | grep -v "::.* PASSED" | tail -12
rm -rf "$W/tuning-cache"
