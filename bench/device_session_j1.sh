#!/usr/bin/env bash
# Device call 1 of run j (H100): blocked.orders_kernel under study knobs (look-back window
# 32/64/128/256 entries, the window replicated in the warps or spread over them, register
# caps), each variant's output compared bitwise with the default's; one tarball.  The
# default knobs compile to the kernel run h tested, so no tests here.
TUNING_CACHE=bench/results/2026-11-22-h100-g/call3/tuning-cache . bench/device_env.sh
timeout 420 python3 bench/blocked_knobs_study.py --grid windows --json "$W/knobs.json" 2>&1 | tail -70
echo "study: $((SECONDS - start)) s"
rm -rf "$W/tuning-cache"
tar czf "$OUT/j1.tgz" -C "$W" .
