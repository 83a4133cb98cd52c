#!/usr/bin/env bash
# Device call 2 of run g (H100): tune the built-in operators, 1-D and 2-D layouts,
# with the register-cap stage (autotune.refine_occupancy), into a fresh table.
TUNING_CACHE=none . bench/device_env.sh
timeout 540 python3 -m prefixscan tune --ops builtin --budget 330 --json "$W/tune.json" > "$W/tune.log" 2>&1
echo "tune: exit $?, $((SECONDS - start)) s"; grep -v "^    excluded" "$W/tune.log" | tail -40
tar czf "$OUT/g2.tgz" -C "$W" .
