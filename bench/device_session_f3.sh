#!/usr/bin/env bash
# Device call 3 of run f: the GPU suites with every result line (-v, so that a
# failure is named even if the time limit cuts the run), the race check, and the
# issue-4 benchmarks with the dispatch as committed (tuple sizes 2/3/5/8, orders
# 2/5/8, the (2^26, 4) axis-0 case).
. bench/device_env.sh
timeout 380 python3 -m pytest tests/test_triton.py tests/test_strategies.py tests/test_compiled.py -v -n 14 \
  -p no:cacheprovider --tb=short -rfE > "$W/gpu-tests.log" 2>&1
echo "suites: $((SECONDS - start)) s"; grep -E "FAILED|ERROR|passed|failed" "$W/gpu-tests.log" | grep -v "::.* PASSED" | tail -20
timeout 100 python3 bench/race_check.py --repeats 5 --json "$W/race.json" > "$W/race.log" 2>&1
echo "race: exit $?"; grep -c "wrong runs 0/" "$W/race.log"; grep -v "wrong runs 0/" "$W/race.log" | tail -5
for s in 2 3 5 8; do
  timeout 30 python3 -m prefixscan bench --device cuda --sizes 27 --dtypes int32,int64 --tuple-size $s --no-progress \
    --no-plot --out "$W/tuple$s" 2>&1 | tail -1
done
grep -h "^| 2^\|^## " "$W"/tuple*/results.md
echo "total: $((SECONDS - start)) s"
tar czf "$OUT/f3.tgz" -C "$W" .
