#!/usr/bin/env bash
# Device call 4 of run f: order 2 with one look-back (on/off, verified), the GPU
# suites (-v: failures named even if the time limit cuts the run), the race check,
# and the issue-4 benchmarks with the committed dispatch.
. bench/device_env.sh
timeout 80 python3 bench/order2_study.py --json "$W/order2.json" 2>&1 | grep -v Warning
echo "order2: $((SECONDS - start)) s"
timeout 330 python3 -m pytest tests/test_triton.py tests/test_strategies.py tests/test_compiled.py -v -n 14 \
  -p no:cacheprovider --tb=short -rfE > "$W/gpu-tests.log" 2>&1
echo "suites: $((SECONDS - start)) s"; grep -E "FAILED|ERROR|passed|failed" "$W/gpu-tests.log" | grep -v "::.* PASSED" | tail -12
timeout 60 python3 bench/race_check.py --repeats 5 --json "$W/race.json" > "$W/race.log" 2>&1
echo "race: exit $?"; grep -c "wrong runs 0/" "$W/race.log"; grep -v "wrong runs 0/" "$W/race.log" | tail -3
for q in 2; do
  timeout 40 python3 -m prefixscan bench --device cuda --sizes 27 --dtypes int32,int64 --order $q --no-progress \
    --no-plot --out "$W/order$q" 2>&1 | tail -1
done
for s in 2 3; do
  timeout 40 python3 -m prefixscan bench --device cuda --sizes 27 --dtypes int32,int64 --tuple-size $s --no-progress \
    --no-plot --out "$W/tuple$s" 2>&1 | tail -1
done
grep -h "^| 2^\|^## " "$W"/order*/results.md "$W"/tuple*/results.md
echo "total: $((SECONDS - start)) s"
tar czf "$OUT/f4.tgz" -C "$W" .
