#!/usr/bin/env bash
# Device call 1 of run f: gathered rows for K below its power of two (tuple sizes
# 3/5/7 on and off, verified), tile-local costs (float64 vs int64; orders: today's
# reduce+scan arithmetic vs the 2q scans of a single look-back), then the GPU suite
# of the kernels that changed.
. bench/device_env.sh
timeout 150 python3 bench/gather_study.py --json "$W/gather.json" 2>&1 | grep -v Warning
echo "gather: $((SECONDS - start)) s"
timeout 120 python3 bench/tile_study.py --json "$W/tile.json" 2>&1 | grep -v Warning
echo "tile: $((SECONDS - start)) s"
timeout 330 python3 -m pytest tests/test_triton.py tests/test_compiled.py -q -n 14 -p no:cacheprovider \
  --tb=short -rfE > "$W/gpu-tests.log" 2>&1
grep -E "^FAILED|^ERROR|passed|failed" "$W/gpu-tests.log" | tail -20
echo "total: $((SECONDS - start)) s"
tar czf "$OUT/f1.tgz" -C "$W" .
