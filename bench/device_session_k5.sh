#!/usr/bin/env bash
# Device call 5 of run k (H100): blocked.orders_kernel as shipped against the general
# kernels it replaces (ratio to copy, same process) with a bitwise race check over 3 repeats
# of every blocked result; one tarball.
TUNING_CACHE=bench/results/2026-11-22-h100-g/call3/tuning-cache . bench/device_env.sh
timeout 420 python3 bench/blocked_compare.py --repeats 3 --json "$W/compare.json" 2>&1 | tail -40
echo "compare: $((SECONDS - start)) s"
rm -rf "$W/tuning-cache"
tar czf "$OUT/k5.tgz" -C "$W" .
