#!/usr/bin/env bash
# Device call 1 of run g: register caps (TileConfig.occupancy) of the look-back
# kernels under their tuned tiles (bench/occupancy_study.py), and the registers
# ptxas gave each case (bench/occupancy_report.py, for the record next to it).
. bench/device_env.sh
python3 bench/occupancy_report.py > "$W/occupancy-report.log" 2>&1
timeout 480 python3 bench/occupancy_study.py --json "$W/occupancy.json" 2>&1 | grep -v Warning | tee "$W/occupancy.log"
echo "total: $((SECONDS - start)) s"
tar czf "$OUT/g1.tgz" -C "$W" .
