#!/usr/bin/env bash
# Device call 2 of run j (H100): blocked.orders_kernel with the look-back window spread
# over the warps (call 1's winner) under rows x warps x register caps, each variant's output
# compared bitwise with the default's; one tarball.
TUNING_CACHE=bench/results/2026-11-22-h100-g/call3/tuning-cache . bench/device_env.sh
timeout 420 python3 bench/blocked_knobs_study.py --grid tiles --json "$W/knobs.json" 2>&1 | tail -70
echo "study: $((SECONDS - start)) s"
rm -rf "$W/tuning-cache"
tar czf "$OUT/j2.tgz" -C "$W" .
