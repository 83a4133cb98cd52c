#!/usr/bin/env bash
# One call on a CUDA machine: checks and measurements by profile, results under $OUT.
#
#   bash benchmarks/device.sh PROFILE [PROFILE ...]        (from the repository root)
#
# Profiles:
#   tests       all GPU tests: tests_backends, tests_algorithms, tests_api and tests_slow (about 25
#               minutes with 12 workers, most of it compiling: several 10-minute calls; run the parts)
#   tests_backends    the GPU tests of tests/backends (355 tests on an H100; about 5 minutes)
#   tests_algorithms  the GPU tests of tests/algorithms (316 tests; about 5 minutes; the two
#               together ran 662 of 671 tests in one 570-second run)
#   tests_api   the other GPU tests (api, differentiable, distributed, dask, fuzz, tuner, cli,
#               check, codecs, package; about 6 minutes) and the compiled-code tests; zarr,
#               numcodecs and dask from the wheels in .whl/ where the image lacks them (carry .whl)
#   tests_slow  the > 2^31-element tests (-m "gpu and slow", 2 workers; about 5 minutes)
#   fuzz        the fuzz suite's GPU profile (PREFIXSCAN_FUZZ_PROFILE=gpu: 800 examples per property
#               on cuda, derandomized; six properties, one worker each; about 6.5 minutes)
#   bench       the headline benchmark with the peers (2^10-2^28, four dtypes), the
#               (2^26, 4) axis-0 case, and the per-call profile at n = 1024
#   fresh       the out-of-box suite, each run a fresh process with an empty user tuning cache
#               (--fresh: the shipped table decides): the headline (2^16, 2^20, 2^27, 2^28, four
#               dtypes, peers), float16/bfloat16 inputs, (2^26, 4) along axis 0, orders 2/5/8 and
#               tuple sizes 2/5/8/32 (int32 and int64 at 2^27); about 6 minutes
#   orders      orders 2/5/8 and tuple sizes 2/5/8, int32 and int64 at 2^27, and their plot
#   strategies  every GPU meta-strategy next to the default (int32, float32, 2^16-2^27)
#   race        repeated scans compared bitwise (tools/race_check.py)
#   compile     the compiler's reports: PTX, registers and occupancy, SASS of the orders kernel
#   tune        one full `prefixscan tune --ops builtin` into an empty cache directory (TUNE_BUDGET
#               seconds, default 490, about the most one 10-minute call allows: on an H100 a budget
#               of 420 s left the last keys, 8-byte float 2-D, 3-21 of their ~28 candidates);
#               tune/tune.json has every measurement, tune/table.json the table to ship.
#               Stability: run it in two calls (each on a fresh machine, so each compiles) and
#               compare the two tune.json with tools/tune_stability.py
#   stability   two full tunes of the built-in keys of one layout (TUNE_LAYOUTS, default 1d) and
#               optionally some dtypes (TUNE_DTYPES), no budget, in two processes with their own
#               empty cache directories, then tools/tune_stability.py on the two, the choices
#               that differ timed against each other (--head-to-head 31).  One call per
#               part: on an H100 the 1-D keys took about 3 minutes cold and 1 warm, the 2-D keys
#               3.5 minutes warm, so split those by dtypes (TUNE_DTYPES=int32,int64, then
#               float32,float64).  stability/table-TAG.json: the first run's table, a part for
#               `shipped add`.  Eight files come back from $OUT: tar the folder
#   tune_compare  a tuned table against every fixed tile (benchmarks/sweep.py --compare-tuned): the
#               one `tune` wrote in the same call, else TUNING_CACHE's, else the shipped table
#   compaction  compact/partition: their GPU tests, then benchmarks/primitives.py --case
#               compact and partition on cuda (2^27, 1/50/99% kept; roof: a copy of the same
#               bytes; peers x[mask] and torch.cat) and on the CPU (10^7, against NumPy)
#   segmented   segmented_scan: its tests (interpreter-shared and GPU), then benchmarks/primitives.py
#               --case segmented (int32/float32 sums at 2^27, segment lengths 1/32/1000/10^6/mix by
#               offsets, flags and keys; roof: a copy of the same bytes; peer: torch cumsum - base)
#   recurrence  linear_recurrence: its kernel's GPU tests, then benchmarks/recurrence.py on cuda
#               (forward / bf16 / forward+backward on four shapes against a copy of the same
#               bytes, accelerated-scan and a compiled associative_scan; the kernel's tilings;
#               cumsum fwd+bwd against torch) and on the CPU (against scipy.signal.lfilter);
#               then log decays (its GPU tests, --log-space: against flash-linear-attention's HGRN).
#               accelerated-scan comes from the wheel in .whl/ (pip download --no-deps
#               accelerated-scan -d .whl), installed into /tmp/site without the index;
#               flash-linear-attention (module fla, with einops) from .whl/ when it does not import
#   scaleout    prefixscan.dask and prefixscan.distributed: their tests (NCCL and CuPy chunks where
#               present), then benchmarks/scaleout.py --torch-local (the distributed scan's local
#               cost against a single-process scan, world size 1 on cuda), then the per-call
#               profile at 2^28 (tools/percall_profile.py: host time of the unplanned and
#               seeded paths, one call at a time).  dask and distributed
#               come from the wheels in .whl/ when the environment lacks them (installed into
#               /tmp/site-extra without the index), in every scaleout profile
#   scaleout_dask  prefixscan.cumsum of dask arrays against dask.array.cumsum's two methods,
#               2^28 int64 and float64, LocalClusters of 1/2/4/8 workers (about 8 minutes)
#   scaleout_zarr  Zarr to Zarr with the delta filter, 2^30 int64 (8 GiB) on 4 workers of 1 GiB,
#               prefixscan against dask.array.cumsum's two methods (the arrays in /tmp)
#   scaling     several GPUs: the NCCL tests (tests/distributed), then benchmarks/scaling.py (weak
#               and strong scaling of prefixscan.distributed over 1, 2, 4, ... GPUs; needs a kind
#               with several GPUs)
#   engine      the engine's primitives: their GPU tests (scan kernels, segmented, compaction,
#               partition, recurrence; then the > 2^31-element ones), the primitives repeated and
#               compared bitwise (tools/race_check.py --primitives), benchmarks/primitives.py for
#               compact, partition and segmented next to CUB (cuda.compute, from the cuda-cccl
#               wheel in .whl/) and torch, and the recurrence's forward against accelerated-scan
#               (wheel in .whl/); about 9 minutes
#   sort        the sort family: sort_tests, then sort_bench (run them as two calls if the first
#               one's compiles take most of the call)
#   sort_tests  its GPU tests (tests/backends/triton/test_sort.py, tests/algorithms/test_sort*.py,
#               the operators' and the fuzz suite's sort cases), then the > 2^31-key one
#               (-m "gpu and slow"); the kernels' registers and spills compiled for sm_90
#               (tools/sort_report.py)
#   sort_bench  benchmarks/sort.py --device cuda: int32 2^28, int64 2^27, float32 keys, keys with
#               int32 values, argsort, argsort of 2^24 keys < 8 with key_bits=3, (65536, 4096)
#               float32 rows, unique and run_length_encode of 2^27 int32; peers CUB's radix sort
#               (cuda.compute, from the cuda-cccl wheel in .whl/), torch.sort, torch.unique,
#               torch.unique_consecutive
#   sort_sweep  the digit pass's tiles side by side (benchmarks/sort.py --tile: the ranking "packed" or
#               "columns", the look-back window, keys per tile, warps) on int32 2^28 keys against CUB and
#               the key_bits=3 argsort; then the registers of each (tools/sort_report.py); about 5 minutes
#   coldstart   benchmarks/cold_start.py: the first scan and a stream of 300 new lengths, each in
#               a fresh process (Triton's cache empty, then warm) next to torch.cumsum; then a
#               cProfile of the warm stream (about 1 minute)
#   ncu         why scans run below the roof: tools/scan_profile.py under Nsight Compute (clocks
#               left alone), each case's scan next to a device copy of its bytes; NCU_CASES
#               overrides the cases (default: the large-n rows below 0.90 of copy and int32 2^28)
#   cub         CUB's scan, scan-by-key, select and partition on the same cases (benchmarks/peers/
#               cub_peers.cu, built with nvcc for sm_90): the peer of the scan and primitives tables
#   all         tests fuzz bench orders strategies race (about 55 minutes, the tests about 30 of
#               them: several 10-minute calls; run the profiles one by one there)
#
# Environment:
#   OUT           where results go (default /tmp/prefixscan-out); one folder per profile
#   TUNING_CACHE  a folder holding a tuning table to measure with, e.g.
#                 benchmarks/results/h100/2026-11-22/tuning-cache (a table is named after
#                 its GPU: another GPU's is ignored).  It is copied, and first-use tuning is
#                 turned off so that the table alone decides.  Unset: the user's cache, with
#                 first-use tuning (docs/tuning.md).
#   WORKERS       pytest workers for the tests_* profiles but tests_slow (default 12: 12-14 ran the
#                 suite on an H100 in 2026-11; the tests that force the widest orders kernels
#                 spill ~21 KB per thread and each process reserves local memory for that on
#                 every SM, so more workers once ran an 80 GB card out of memory)
#   TUNE_BUDGET   seconds for `prefixscan tune` (default 490)
#   PACK          set: the results end as one $OUT/results.tar.gz (tools that fetch only a few
#                 files from $OUT, e.g. after `fresh`, which writes about 30)
#
# The package must be importable: installed (pip install -e '.[gpu,bench]'), or from
# this checkout, which the script puts on PYTHONPATH.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
export PYTHONUNBUFFERED=1 PYTHONPATH=$ROOT${PYTHONPATH:+:$PYTHONPATH}
OUT=${OUT:-/tmp/prefixscan-out}
WORKERS=${WORKERS:-12}
PY=${PYTHON:-python3}
mkdir -p "$OUT"

profiles=()
for profile in "$@"; do
  case $profile in
    all) profiles+=(tests_backends tests_algorithms tests_api tests_slow fuzz bench orders strategies race) ;;
    tests) profiles+=(tests_backends tests_algorithms tests_api tests_slow) ;;
    sort) profiles+=(sort_tests sort_bench) ;;
    tests_backends|tests_algorithms|tests_api|tests_slow|fuzz|cub|ncu|scaling|bench|fresh|tune_compare|stability|orders|strategies|race|compile|tune|compaction|segmented|recurrence|engine|sort_tests|sort_bench|sort_sweep|coldstart|\
    scaleout|scaleout_dask|\
    scaleout_zarr)
      profiles+=("$profile") ;;
    *) echo "unknown profile: $profile"; set -- ;;
  esac
done
if [ $# -eq 0 ] || [ ${#profiles[@]} -eq 0 ]; then
  awk 'NR > 1 && /^#/ { print; next } NR > 1 { exit }' "$0"
  exit 2
fi

if [ -n "${TUNING_CACHE:-}" ]; then
  work=$(mktemp -d)
  cp -r "$TUNING_CACHE" "$work/tuning-cache"
  export PREFIXSCAN_CACHE_DIR=$work/tuning-cache PREFIXSCAN_AUTOTUNE=0
fi

nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.mem --format=csv,noheader | tee "$OUT/gpu.txt"
$PY -c 'import prefixscan, torch, triton; print("prefixscan", prefixscan.__version__, "torch", torch.__version__,
"triton", triton.__version__)' | tee "$OUT/versions.txt"
start=$SECONDS
status=0

step() {  # step NAME TIMEOUT COMMAND...: run, log under $OUT, report exit status and time
  local name=$1 limit=$2
  shift 2
  local t=$SECONDS
  # SIGINT first: pytest cut short still prints its failures' tracebacks and summary
  timeout -s INT -k 20 "$limit" "$@" > "$OUT/$name.log" 2>&1
  local rc=$?
  echo "$name: exit $rc, $((SECONDS - t)) s"
  [ $rc -eq 0 ] || status=1
  return $rc
}

bench() {  # bench FOLDER ARGS...: one `prefixscan bench --device cuda` run into $OUT/FOLDER
  local folder=$1
  shift
  mkdir -p "$OUT/$(dirname "$folder")"
  step "$folder" 200 $PY -m prefixscan bench --device cuda --no-progress --out "$OUT/$folder" "$@"
  grep -h "^| \(2^\|[0-9]\)\|^## " "$OUT/$folder/results.md" 2>/dev/null | grep -v "^## Per-call"
}

gpu_tests() {  # gpu_tests NAME LIMIT MARKS WORKERS ARGS...: pytest with every outcome named in the log
  local name=$1 limit=$2 marks=$3 workers=$4
  shift 4
  mkdir -p "$OUT/tests"
  step "tests/$name" "$limit" $PY -m pytest -m "$marks" -n "$workers" --timeout 300 -p no:cacheprovider -v \
    --tb=short -rfE --durations=15 "$@"
  grep -E "^(FAILED|ERROR)|passed|failed" "$OUT/tests/$name.log" | tail -12
}

profile_scaling() {
  mkdir -p "$OUT/scaling"
  step scaling/tests 300 $PY -m pytest tests/distributed -m gpu -p no:cacheprovider -v --tb=short -rfE
  tail -3 "$OUT/scaling/tests.log"
  step scaling/bench 560 $PY benchmarks/scaling.py --out "$OUT/scaling"
  cat "$OUT/scaling/scaling.md"
}

profile_ncu() {
  mkdir -p "$OUT/ncu"
  local ncu
  ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
  # shellcheck disable=SC2086
  step ncu/profile 400 "$ncu" --clock-control none --profile-from-start off --section SpeedOfLight \
    --section MemoryWorkloadAnalysis --section Occupancy --section LaunchStats --section WarpStateStats \
    --section SchedulerStats $PY tools/scan_profile.py ${NCU_CASES:-int32:28 bfloat16:28 int64:27 \
    float32:28:rows=65536 int32:28:tuple=4 int32:27:order=5 int32:27:tuple=32 int64:27:order=8}
  grep -E '^\{|^  [a-z_0-9]+.*\(|DRAM Throughput|Duration|Registers Per|Block Limit (Registers|Shared Mem)|Dynamic Shared|Theoretical Occupancy|Achieved Occupancy|Eligible Warps|Issued Warp' \
    "$OUT/ncu/profile.log" > "$OUT/ncu/summary.txt"
  cat "$OUT/ncu/summary.txt"
}

profile_cub() {
  mkdir -p "$OUT/cub"
  step cub/build 180 nvcc -O3 -std=c++17 -arch=sm_90 benchmarks/peers/cub_peers.cu -o /tmp/cub_peers
  step cub/cub 300 sh -c "/tmp/cub_peers 27 15 > '$OUT/cub/cub.md'"
  cat "$OUT/cub/cub.md"
}

profile_tests_backends() {
  gpu_tests backends 570 "gpu and not slow" "$WORKERS" tests/backends --deselect tests/backends/triton/tuner
}

profile_tests_algorithms() {
  gpu_tests algorithms 570 "gpu and not slow" "$WORKERS" tests/algorithms
}

profile_fuzz() {
  PREFIXSCAN_FUZZ_PROFILE=gpu gpu_tests fuzz 570 "gpu" 6 tests/test_fuzz.py
}

profile_tests_api() {
  from_wheels "zarr, numcodecs, dask.array, distributed"  # the codec's GPU buffers, dask with CuPy chunks
  gpu_tests api 450 "gpu and not slow" "$WORKERS" $(ls -d tests/*/ tests/test_*.py | grep -v -e "^tests/backends/" \
    -e "^tests/algorithms/") tests/backends/triton/tuner
  step tests/compiled 120 $PY -m pytest $(find tests -name test_compiled.py) -p no:cacheprovider -q --tb=short
  tail -1 "$OUT/tests/compiled.log"
}

profile_tests_slow() {
  gpu_tests slow 570 "gpu and slow" 2 tests
}

profile_bench() {
  bench bench/bench --sizes 10,20,24,27,28
  # a (2^26, 4) array along axis 0 is tuple size 4 of its 2^28 elements
  bench bench/axis0-2e26x4 --sizes 28 --dtypes int32 --tuple-size 4 --no-plot
  step bench/percall 60 $PY tools/percall_profile.py
  head -10 "$OUT/bench/percall.log"
}

profile_fresh() {
  bench fresh/headline --fresh --sizes 16,20,27,28 --no-plot
  bench fresh/half --fresh --sizes 27,28 --dtypes float16,bfloat16 --no-plot
  bench fresh/axis0-2e26x4 --fresh --sizes 28 --dtypes int32,float32 --tuple-size 4 --no-plot
  for q in 2 5 8; do
    bench fresh/order$q --fresh --sizes 27 --dtypes int32,int64 --order $q --no-plot
  done
  for s in 2 5 8 32; do
    bench fresh/tuple$s --fresh --sizes 27 --dtypes int32,int64 --tuple-size $s --no-plot
  done
}

profile_coldstart() {
  mkdir -p "$OUT/coldstart"
  step coldstart/rows 300 $PY benchmarks/cold_start.py --device cuda --out "$OUT/coldstart"
  cat "$OUT/coldstart/cold-start-cuda.md"
  local cache
  cache=$(mktemp -d)
  # a warm Triton cache for the profile: one stream run fills it
  TRITON_CACHE_DIR=$cache step coldstart/fill 120 $PY benchmarks/cold_start.py --child --row stream \
    --peer prefixscan --device cuda
  TRITON_CACHE_DIR=$cache step coldstart/profile 120 $PY -m cProfile -o "$OUT/coldstart/stream.prof" \
    benchmarks/cold_start.py --child --row stream --peer prefixscan --device cuda
  $PY -c "import pstats; pstats.Stats('$OUT/coldstart/stream.prof').sort_stats('cumtime').print_stats(45)" \
    > "$OUT/coldstart/stream-profile-warm.txt"
  rm -rf "$cache"
}

profile_orders() {
  for q in 2 5 8; do
    bench orders/order$q --sizes 27 --dtypes int32,int64 --order $q --no-plot
  done
  for s in 2 5 8; do
    bench orders/tuple$s --sizes 27 --dtypes int32,int64 --tuple-size $s --no-plot
  done
  step orders/plot 60 $PY benchmarks/plot_orders.py "$OUT/orders" --out "$OUT/orders/orders-tuples.png"
}

profile_strategies() {
  bench strategies --sizes 16,20,24,27 --dtypes int32,float32 --strategies all
}

profile_race() {
  mkdir -p "$OUT/race"
  step race/race 500 $PY tools/race_check.py --repeats 5 --json "$OUT/race/race.json"
  tail -4 "$OUT/race/race.log"
}

profile_compile() {
  mkdir -p "$OUT/compile"
  step compile/ptx 300 $PY tools/compile_report.py
  step compile/occupancy 300 $PY tools/occupancy_report.py
  step compile/sass-int64-order8 120 $PY tools/sass_report.py int64 8 1
  step compile/sass-int32-tuple5-odd 120 $PY tools/sass_report.py int32 1 5 --odd-length
  head -2 "$OUT"/compile/sass-*.log
}

profile_tune() {
  mkdir -p "$OUT/tune"
  local cache
  cache=$(mktemp -d)
  # The step's limit leaves the call (600 s) room for what ran before it, so that the
  # tune ends by itself and writes tune.json.
  local limit=$((${TUNE_BUDGET:-490} + 60))
  [ $limit -le $((590 - SECONDS)) ] || limit=$((590 - SECONDS))
  PREFIXSCAN_CACHE_DIR=$cache step tune/tune $limit $PY -m prefixscan tune --ops builtin \
    --budget "${TUNE_BUDGET:-490}" --json "$OUT/tune/tune.json"
  cp "$cache"/tuning-*.json "$OUT/tune/table.json"  # comes back from $OUT (two folders down at most)
  rm -rf "$OUT/tune/tuning-cache"
  mv "$cache" "$OUT/tune/tuning-cache"  # the table under its own name, for tune_compare in the same call
  grep -v "^    excluded" "$OUT/tune/tune.log" | tail -20
}

profile_stability() {
  mkdir -p "$OUT/stability"
  local layouts=${TUNE_LAYOUTS:-1d} dtypes=${TUNE_DTYPES:-int32,float32,int64,float64} run cache tag left
  tag=$layouts${TUNE_DTYPES:+-${TUNE_DTYPES//,/-}}
  for run in A B; do
    cache=$(mktemp -d)
    left=$((590 - SECONDS))
    [ $left -gt 5 ] || left=5  # timeout 0 would mean none
    PREFIXSCAN_CACHE_DIR=$cache step "stability/tune$run-$tag" $left $PY -m prefixscan tune \
      --ops builtin --layouts "$layouts" --dtypes "$dtypes" --json "$OUT/stability/tune$run-$tag.json"
    [ $run = B ] || cp "$cache"/tuning-*.json "$OUT/stability/table-$tag.json"
  done
  # the choices that differ, measured against each other (31 interleaved rounds, a third process)
  left=$((595 - SECONDS))
  [ $left -gt 5 ] || left=5
  step "stability/compare-$tag" $left $PY tools/tune_stability.py "$OUT/stability/tuneA-$tag.json" \
    "$OUT/stability/tuneB-$tag.json" --head-to-head 31 --json "$OUT/stability/stability-$tag.json"
  tail -2 "$OUT/stability/compare-$tag.log"
}

profile_tune_compare() {
  mkdir -p "$OUT/tune"
  if [ -z "${TUNING_CACHE:-}" ] && [ -d "$OUT/tune/tuning-cache" ]; then
    export PREFIXSCAN_CACHE_DIR=$OUT/tune/tuning-cache  # the table `tune` just wrote
  fi
  step tune/compare 300 env PREFIXSCAN_AUTOTUNE=0 $PY benchmarks/sweep.py --compare-tuned --json "$OUT/tune/compare.json"
  grep -E "^COMPARE|Error" "$OUT/tune/compare.log"
}

profile_compaction() {
  mkdir -p "$OUT/compaction"
  step compaction/tests 400 $PY -m pytest tests/algorithms/test_compaction.py tests/algorithms/test_partition.py \
    -p no:cacheprovider -q --tb=short -rfE
  tail -3 "$OUT/compaction/tests.log"
  for case in compact partition; do
    step compaction/$case-cuda 300 $PY benchmarks/primitives.py --case $case --device cuda --out "$OUT/compaction"
    grep "prefixscan" "$OUT/compaction/$case-cuda.md"
    step compaction/$case-cpu 200 $PY benchmarks/primitives.py --case $case --device cpu --out "$OUT/compaction"
    grep "prefixscan\|1 thread" "$OUT/compaction/$case-cpu.md"
  done
}

profile_segmented() {
  mkdir -p "$OUT/segmented"
  step segmented/tests 300 $PY -m pytest tests/backends/triton/test_segmented.py tests/algorithms/test_segmented.py \
    -p no:cacheprovider -q --tb=short -rfE
  tail -3 "$OUT/segmented/tests.log"
  step segmented/segmented-cuda 280 $PY benchmarks/primitives.py --case segmented --device cuda --out "$OUT/segmented"
  grep "prefixscan\|torch" "$OUT/segmented/segmented-cuda.md"
}

profile_engine() {
  mkdir -p "$OUT/engine"
  from_wheels "cuda.compute, accelerated_scan"
  gpu_tests engine 190 "gpu and not slow" 14 tests/backends/triton/test_protocol.py \
    tests/backends/triton/test_segmented.py tests/backends/triton/test_lookback.py tests/backends/triton/test_runtime.py \
    tests/backends/triton/test_blocked.py tests/backends/triton/test_recurrence.py tests/algorithms/test_compaction.py \
    tests/algorithms/test_partition.py tests/algorithms/test_segmented.py tests/algorithms/test_segment_arguments.py
  gpu_tests engine-slow 50 "gpu and slow" 1 tests/algorithms/test_compaction.py
  step engine/race 35 $PY tools/race_check.py --primitives --repeats 4 --json "$OUT/engine/race.json"
  grep -c "wrong runs 0/" "$OUT/engine/race.log"; grep -v "wrong runs 0/" "$OUT/engine/race.log" | head -5
  for case in compact:110 partition:80 segmented:70; do
    step engine/${case%%:*} ${case##*:} $PY benchmarks/primitives.py --case ${case%%:*} --device cuda --repeats 10 \
      --out "$OUT/engine"
  done
  step engine/recurrence 40 $PY benchmarks/recurrence.py --device cuda --out "$OUT/engine" --repeats 10 --no-plans \
    --forward-only
}

profile_sort_tests() {
  mkdir -p "$OUT/sort"
  gpu_tests sort 330 "gpu and not slow" "$WORKERS" tests/backends/triton/test_sort.py tests/algorithms/test_sort.py \
    tests/algorithms/test_sort_arguments.py tests/differentiable/test_sort_ops.py tests/test_fuzz.py -k "sort"
  gpu_tests sort-slow 120 "gpu and slow" 1 tests/backends/triton/test_sort.py
  step sort/registers 120 $PY tools/sort_report.py --quick
  cat "$OUT/sort/registers.log"
}

profile_sort_bench() {
  mkdir -p "$OUT/sort"
  from_wheels "cuda.compute"
  step sort/bench 540 $PY benchmarks/sort.py --device cuda --out "$OUT/sort"
  cat "$OUT/sort/sort-cuda.md"
}

profile_sort_sweep() {
  mkdir -p "$OUT/sort_sweep"
  from_wheels "cuda.compute"
  local tile
  for tile in window=4 window=8 block=1024 block=4096,window=4 rank=columns,block=1024 num_warps=16; do
    step "sort_sweep/${tile//[=,]/-}" 100 $PY benchmarks/sort.py --device cuda --out "$OUT/sort_sweep" --repeats 5 \
      --cases keys32,experts --tile "$tile"
    grep "prefixscan" "$OUT/sort_sweep/${tile//[=,]/-}.log"
  done
  for tile in "--rank packed" "--rank columns --block 1024" "--block 4096"; do
    $PY tools/sort_report.py --quick --only int32 $tile 2>&1 | tail -4
  done | tee "$OUT/sort_sweep/registers.log"
}

profile_recurrence() {
  mkdir -p "$OUT/recurrence"
  if ls .whl/accelerated_scan*.whl > /dev/null 2>&1; then
    $PY -m pip install -q --no-index --no-deps --target /tmp/site .whl/accelerated_scan*.whl
    export PYTHONPATH=/tmp/site:$PYTHONPATH
  fi
  step recurrence/tests 300 $PY -m pytest tests/backends/triton/test_recurrence.py -m gpu -p no:cacheprovider -q \
    --tb=short -rfE
  tail -3 "$OUT/recurrence/tests.log"
  step recurrence/cuda 420 $PY benchmarks/recurrence.py --device cuda --out "$OUT/recurrence"
  grep "^| BTC\|^| BCT\|^ps.cumsum" "$OUT/recurrence/recurrence-cuda.md"
  step recurrence/cpu 200 $PY benchmarks/recurrence.py --device cpu --out "$OUT/recurrence"
  grep "^| " "$OUT/recurrence/recurrence-cpu.md"
  from_wheels "fla.ops.hgrn"
  step recurrence/log-tests 200 $PY -m pytest tests/differentiable/test_autograd_log_space.py -m gpu \
    -p no:cacheprovider -q --tb=short -rfE
  tail -3 "$OUT/recurrence/log-tests.log"
  step recurrence/log-space 300 $PY benchmarks/recurrence.py --device cuda --log-space --out "$OUT/recurrence"
  grep "^| " "$OUT/recurrence/recurrence-cuda-log-space.md"
}

from_wheels() {  # from_wheels "MODULES": the wheels of .whl/ onto PYTHONPATH when `import MODULES` fails
  if ! $PY -c "import $1" > /dev/null 2>&1 && ls .whl/*.whl > /dev/null 2>&1; then
    for wheel in .whl/*.whl; do  # one by one: a wheel for another Python is skipped, not fatal
      $PY -m pip install -q --no-index --no-deps --upgrade --target /tmp/site-extra "$wheel" > /dev/null 2>&1 \
        || echo "skipped $wheel"
    done
    export PYTHONPATH=/tmp/site-extra:$PYTHONPATH
  fi
}

dask_from_wheels() {  # dask and distributed, from .whl/ when the environment lacks them
  from_wheels "dask.array, distributed"
  $PY -c 'import dask, distributed; print("dask", dask.__version__, "distributed", distributed.__version__)' \
    | tee -a "$OUT/versions.txt"
}

profile_scaleout() {
  mkdir -p "$OUT/scaleout"
  dask_from_wheels
  step scaleout/tests 300 $PY -m pytest tests/dask tests/distributed tests/algorithms/test_reduction.py \
    tests/algorithms/test_pieces.py -p no:cacheprovider -q --tb=short -rfE
  tail -3 "$OUT/scaleout/tests.log"
  step scaleout/torch-local 240 $PY benchmarks/scaleout.py --no-dask --torch-local --out "$OUT/scaleout/torch-local"
  grep "^| scan\|^| linear" "$OUT/scaleout/torch-local/scaleout.md"
  # The pieces' host time: the unplanned and seeded paths one call at a time at 2^28.
  step scaleout/percall 120 $PY tools/percall_profile.py --n 268435456
  head -10 "$OUT/scaleout/percall.log"
}

profile_scaleout_dask() {
  mkdir -p "$OUT/scaleout_dask"
  dask_from_wheels
  step scaleout_dask/dask 560 $PY benchmarks/scaleout.py --out "$OUT/scaleout_dask" --dtypes int64,float64 \
    --workers 1,2,4,8 --repeats 3
  grep "^| int\|^| float" "$OUT/scaleout_dask/scaleout.md"
}

profile_scaleout_zarr() {
  mkdir -p "$OUT/scaleout_zarr"
  dask_from_wheels
  step scaleout_zarr/zarr 560 $PY benchmarks/scaleout.py --no-dask --zarr --zarr-elements '2**30' --zarr-chunk '2**22' \
    --zarr-workers 4 --zarr-memory-limit 1GiB --zarr-timeout 120 --zarr-dir /tmp/prefixscan-zarr --out "$OUT/scaleout_zarr"
  grep "^| prefixscan\|^| dask" "$OUT/scaleout_zarr/scaleout.md"
}

for p in "${profiles[@]}"; do
  echo "== $p"
  "profile_$p"
done
echo "total: $((SECONDS - start)) s, results in $OUT"
if [ -n "${PACK:-}" ]; then
  tar -czf /tmp/prefixscan-results.tar.gz -C "$OUT" . && rm -rf "${OUT:?}"/* && mv /tmp/prefixscan-results.tar.gz "$OUT/results.tar.gz"
  echo "packed: $OUT/results.tar.gz"
fi
exit $status
