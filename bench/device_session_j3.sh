#!/usr/bin/env bash
# Device call 3 of run j (H100): blocked.orders_kernel with the tile staged in shared
# memory (read twice from there, x holds no registers across the look-back) under register
# caps, against call 2's best unstaged knobs, outputs compared bitwise; one tarball.
TUNING_CACHE=bench/results/2026-11-22-h100-g/call3/tuning-cache . bench/device_env.sh
timeout 420 python3 bench/blocked_knobs_study.py --grid stage --json "$W/knobs.json" 2>&1 | tail -70
echo "study: $((SECONDS - start)) s"
rm -rf "$W/tuning-cache"
tar czf "$OUT/j3.tgz" -C "$W" .
