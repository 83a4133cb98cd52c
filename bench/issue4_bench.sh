#!/usr/bin/env bash
# Sourced by device session scripts (after device_env.sh): issue 4's cases with the peers,
# `prefixscan bench` orders 2/5/8 and tuple sizes 2/5/8, int32 and int64 at ~2^27, into
# $W/order$q and $W/tuple$s, then one line per case.
for q in 2 5 8; do
  timeout 40 python3 -m prefixscan bench --device cuda --sizes 27 --dtypes int32,int64 --order $q --no-progress \
    --no-plot --out "$W/order$q" 2>&1 | tail -1
done
for s in 2 5 8; do
  timeout 40 python3 -m prefixscan bench --device cuda --sizes 27 --dtypes int32,int64 --tuple-size $s --no-progress \
    --no-plot --out "$W/tuple$s" 2>&1 | tail -1
done
grep -h "^| 1\|^| 2^\|^## " "$W"/order*/results.md "$W"/tuple*/results.md
