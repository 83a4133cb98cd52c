#!/usr/bin/env bash
# Device call 1 of run i (H100): where the one-look-back kernel's time goes, from the
# hardware (Nsight Compute: warp stall sampling per source line, occupancy, memory):
# int32 order 8, int64 order 5, int64 tuple size 8, int32 order 2 as the baseline.
TUNING_CACHE=bench/results/2026-11-22-h100-g/call3/tuning-cache . bench/device_env.sh
SECTIONS="--section LaunchStats --section Occupancy --section SpeedOfLight --section WarpStateStats --section SourceCounters --section MemoryWorkloadAnalysis"
for case in "int32 8 1" "int64 5 1" "int64 1 8" "int32 2 1"; do
  set -- $case
  name=prof_$1_o$2_s$3
  timeout 150 ncu --clock-control none $SECTIONS --import-source yes -k regex:orders_kernel --launch-skip 1 \
    --launch-count 1 -f -o "$W/$name" python3 bench/profile_blocked.py --dtype $1 --order $2 --tuple-size $3 \
    > "$W/$name.log" 2>&1
  tail -3 "$W/$name.log"
  ncu -i "$W/$name.ncu-rep" --page details --csv > "$W/$name.details.csv" 2>&1
  ncu -i "$W/$name.ncu-rep" --page source --csv --print-source cuda > "$W/$name.source-cuda.csv" 2>&1
  ncu -i "$W/$name.ncu-rep" --page source --csv --print-source sass > "$W/$name.source-sass.csv" 2>&1
  wc -c "$W/$name".*.csv
  echo "$name: $((SECONDS - start)) s"
done
rm -rf "$W/tuning-cache"
tar czf "$OUT/i1.tgz" -C "$W" .
