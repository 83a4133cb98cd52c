#!/usr/bin/env bash
# Device call 5 of run n (H100): a look-back step that finds the nearest entry not ready
# sleeps (nanosleep 100 / 400 ns) before probing again, against none (study grid `sleep`).
TUNING_CACHE=bench/results/2026-11-22-h100-g/call3/tuning-cache . bench/device_env.sh
timeout 300 python3 bench/blocked_knobs_study.py --grid sleep --json "$W/knobs.json" 2>&1 | tail -24
echo "total: $((SECONDS - start)) s"
rm -rf "$W/tuning-cache"
tar czf "$OUT/n5.tgz" -C "$W" .
