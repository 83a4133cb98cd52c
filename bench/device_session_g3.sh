#!/usr/bin/env bash
# Device call 3 of run g (H100): re-tune the n >= 2^26 keys (call 2's budget skipped
# most of their candidates) with the register caps tried on the two fastest
# decoupled look-back tiles; merged into call 2's table.
TUNING_CACHE=bench/results/2026-11-22-h100-g/call2/tuning-cache . bench/device_env.sh
timeout 560 python3 -m prefixscan tune --ops builtin --sizes 26 --budget 430 --json "$W/tune.json" > "$W/tune.log" 2>&1
echo "tune: exit $?, $((SECONDS - start)) s"; grep -v "^    excluded" "$W/tune.log" | tail -12
tar czf "$OUT/g3.tgz" -C "$W" .
