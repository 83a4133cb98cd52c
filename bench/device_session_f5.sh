#!/usr/bin/env bash
# Device call 5 of run f: after the order-2 reductions became wrapping tl.reduce
# (tl.sum widened in the interpreter) and int64 left the order-2 path: the GPU
# tests of orders, columns, layouts and delta coding (-v), the race check of the
# new paths, and the order-2 / tuple-size benchmarks with the committed dispatch.
. bench/device_env.sh
timeout 240 python3 -m pytest tests/test_triton.py -k "order or masked or axes or delta or repeated" -v -n 14 \
  -p no:cacheprovider --tb=short -rfE > "$W/gpu-tests.log" 2>&1
echo "tests: $((SECONDS - start)) s"; grep -E "FAILED|ERROR|passed|failed" "$W/gpu-tests.log" | grep -v "::.* PASSED" | tail -12
for only in "order 2" "tuple 2" "(56829,3)"; do
  timeout 60 python3 bench/race_check.py --repeats 5 --only "$only" --json "$W/race-${only//[^a-z0-9]/_}.json" 2>&1 \
    | grep -v Warning
done
echo "race: $((SECONDS - start)) s"
timeout 50 python3 -m prefixscan bench --device cuda --sizes 27 --dtypes int32,int64,float32,float64 --order 2 \
  --no-progress --no-plot --out "$W/order2" 2>&1 | tail -1
grep -h "^| 2^\|^## " "$W"/order2/results.md
echo "total: $((SECONDS - start)) s"
tar czf "$OUT/f5.tgz" -C "$W" .
