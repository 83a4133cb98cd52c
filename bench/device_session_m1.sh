#!/usr/bin/env bash
# Device call 1 of run m (H100): the lost run l's kernel (look-back entries read as 16-byte
# vectors, one cross-warp reduction per fold, int64 tuples of 8 columns in long rows) measured
# again: issue 4's orders and tuple sizes with the peers, then the study grid `async`
# (padded tuples by cp.async, caps, a 256-entry window, the tile-local ceiling); one tarball.
TUNING_CACHE=bench/results/2026-11-22-h100-g/call3/tuning-cache . bench/device_env.sh
for q in 2 5 8; do
  timeout 60 python3 -m prefixscan bench --device cuda --sizes 27 --dtypes int32,int64 --order $q --no-progress \
    --no-plot --out "$W/order$q" 2>&1 | tail -1
done
for s in 2 5 8; do
  timeout 60 python3 -m prefixscan bench --device cuda --sizes 27 --dtypes int32,int64 --tuple-size $s --no-progress \
    --no-plot --out "$W/tuple$s" 2>&1 | tail -1
done
grep -h "^| 1\|^| 2^\|^## " "$W"/order*/results.md "$W"/tuple*/results.md
echo "bench: $((SECONDS - start)) s"
timeout $((560 - SECONDS + start)) python3 bench/blocked_knobs_study.py --grid async --json "$W/knobs.json" 2>&1 | tail -60
echo "total: $((SECONDS - start)) s"
rm -rf "$W/tuning-cache"
tar czf "$OUT/m1.tgz" -C "$W" .
