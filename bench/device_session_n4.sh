#!/usr/bin/env bash
# Device call 4 of run n (H100): the launch rules' tests and more than 2^31 elements through
# blocked.orders_kernel, the comparison with the general kernels and a bitwise race check
# over 3 repeats, then the study grid `wide_n` (16-word entries); one tarball.
TUNING_CACHE=bench/results/2026-11-22-h100-g/call3/tuning-cache . bench/device_env.sh
timeout 150 python3 -m pytest tests/test_triton.py -p no:cacheprovider -v --tb=short -rfE \
  -k "blocked_strided or register_cap or tile_rows or blocked_applies or blocked_beyond" > "$W/gpu-tests.log" 2>&1
echo "tests: $((SECONDS - start)) s"; grep -E "FAILED|ERROR| passed| failed" "$W/gpu-tests.log" | tail -12
timeout 240 python3 bench/blocked_compare.py --repeats 3 --json "$W/compare.json" 2>&1 | tail -36
echo "compare: $((SECONDS - start)) s"
timeout $((560 - SECONDS + start)) python3 bench/blocked_knobs_study.py --grid wide_n --json "$W/knobs.json" 2>&1 | tail -20
echo "total: $((SECONDS - start)) s"
rm -rf "$W/tuning-cache"
tar czf "$OUT/n4.tgz" -C "$W" .
