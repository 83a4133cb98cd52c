#!/usr/bin/env bash
# Device call 8 of run k (H100): review pass (orders_kernel's output tail as one branch per
# tile kind, same SASS offline; tests share an orders oracle): the blocked GPU tests.
TUNING_CACHE=bench/results/2026-11-22-h100-g/call3/tuning-cache . bench/device_env.sh
timeout 290 python3 -m pytest tests/test_triton.py -n 16 -p no:cacheprovider -v --tb=short -rfE \
  -k "blocked or masked_columns_dispatch" > "$W/gpu-tests.log" 2>&1
echo "tests: $((SECONDS - start)) s"; grep -E "FAILED|ERROR| passed| failed" "$W/gpu-tests.log" | tail -12
rm -rf "$W/tuning-cache"
tar czf "$OUT/k8.tgz" -C "$W" .
