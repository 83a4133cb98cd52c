#!/usr/bin/env bash
# Device call 2 of run f: masked columns on 1-D tiles (kernels.scan_cols_kernel)
# against the 2-D kernel for tuple sizes 2-8 and the (2^26, 4) axis-0 case, the
# GPU suites, and the race check (its K = 3, 4, 5 cases now run the new kernel).
. bench/device_env.sh
timeout 150 python3 bench/columns_study.py --json "$W/columns.json" 2>&1 | grep -v Warning
echo "columns: $((SECONDS - start)) s"
timeout 330 python3 -m pytest tests/test_triton.py tests/test_strategies.py tests/test_compiled.py -q -n 14 \
  -p no:cacheprovider --tb=short -rfE > "$W/gpu-tests.log" 2>&1
echo "suites: $((SECONDS - start)) s"; grep -E "^FAILED|^ERROR|passed|failed" "$W/gpu-tests.log" | tail -20
timeout 90 python3 bench/race_check.py --repeats 5 --json "$W/race.json" > "$W/race.log" 2>&1
echo "race: exit $?"; tail -8 "$W/race.log"
echo "total: $((SECONDS - start)) s"
tar czf "$OUT/f2.tgz" -C "$W" .
