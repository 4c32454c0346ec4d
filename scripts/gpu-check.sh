#!/usr/bin/env bash
# On the GPU test machine (H100/H200, CUDA 13, no ALSA/libsndfile/libsystemd/tshark): builds for
# sm_90, runs the whole test suite (no CUDA test may skip there), the CUDA tests under
# compute-sanitizer memcheck and racecheck, and the GPU benchmarks (CPU benchmarks belong to the
# machine whose CPU they describe). Results go to $OUT (or ./gpu-out), at most 8 files.
# Usage: scripts/gpu-check.sh [all|tests|sanitize|bench|kernels|peers|scenarios]: `tests` builds and
# runs the tests, `sanitize` builds (a no-op after `tests` on the same machine) and runs the
# sanitizers; the benchmarks come in three parts, each of which builds first where the build is
# not there yet: `kernels` (the stages' kernels), `peers` (each against CuPy and PyTorch in the
# same run) and `scenarios` (the real vigild); `bench` is the three. `all` (the default) is
# everything. The device tool's calls are limited to 10 minutes: there, run the parts one by one.
# `scaling` (not in `all`: for a host with several GPUs, issue 53): S1 on 1, 2, 4 ... of its GPUs
# (scripts/gpu_scaling.py), the highest clean load of each and the ratio to one GPU.
# BUILD_DIR (default build-gpu): where it builds (the device tool's copy of the tree is replaced at
# each call: a build under /tmp outlives it while the machine stays warm).
set -uo pipefail
cd "$(dirname "$0")/.."
part="${1:-all}"
case "$part" in all|tests|sanitize|bench|kernels|peers|scenarios|scaling) ;;
  *) echo "usage: scripts/gpu-check.sh [all|tests|sanitize|bench|kernels|peers|scenarios|scaling]" >&2; exit 2 ;; esac
runs() {  # whether part $1 runs in this call
  { [ "$part" = all ] && [ "$1" != scaling ]; } || [ "$part" = "$1" ] || { [ "$part" = bench ] && case "$1" in kernels|peers|scenarios) true ;; *) false ;; esac; }
}
out="${OUT:-gpu-out}"
mkdir -p "$out"
build="${BUILD_DIR:-build-gpu}"
status=0
{
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
  nvcc --version | tail -2
} | tee "$out/device.txt"
if runs tests || runs sanitize || [ ! -x "$build/bench/fir_stage_bench" ]; then
cmake -S . -B "$build" -G Ninja -DVIGIL_CUDA=ON -DVIGIL_ALSA=OFF -DVIGIL_WEB=OFF -DCMAKE_CUDA_ARCHITECTURES=90 \
  -DCMAKE_BUILD_TYPE=Release >"$out/build.log" 2>&1 || { tail -50 "$out/build.log"; exit 1; }
cmake --build "$build" -j "$(nproc)" >>"$out/build.log" 2>&1 || { tail -50 "$out/build.log"; exit 1; }
fi
if runs tests; then
# The unit tests first, then the services (vigild judged on its deadlines): the CUDA unit tests'
# sweeps keep the GPU busy, and the driver time-slices it between processes. The services run
# four at a time: with eight, a paced vigild (2 channels at 10x, 1 ms chunks) that started beside
# seven others starting their CUDA contexts saw a 73 ms stall and dropped 9 chunks (2026-11-25).
(
  cd "$build" || exit 1
  st=0
  ctest --output-on-failure -j 8 -LE integration || st=1
  ctest --output-on-failure -j 4 -L integration || st=1
  exit $st
) >"$out/ctest.log" 2>&1 || status=1
grep -E "tests passed|Failed|Total Test time" "$out/ctest.log"
cuda_log=$(mktemp)
(cd "$build" && ctest -L cuda --output-on-failure) >"$cuda_log" 2>&1 || status=1
{ echo "=== ctest -L cuda"; cat "$cuda_log"; } >>"$out/ctest.log"
if grep -q "Skipped" "$cuda_log"; then
  echo "gpu-check: a CUDA test skipped on the GPU machine:"; grep "Skipped" "$cuda_log"; status=1
fi
fi
if runs sanitize; then
if command -v compute-sanitizer >/dev/null || [ -x /usr/local/cuda/bin/compute-sanitizer ]; then
  cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  # One job per (tool, binary), SANITIZE_JOBS (default 6) at a time: the tools spend most of their
  # time on the host, so the binaries share the GPU well, and one after the other the two tools
  # took the whole part past the device's 10-minute call (cut after 416 s, 2026-11-23). Each job
  # writes its own log; they are joined in a fixed order afterwards.
  jobs_dir=$(mktemp -d)
  sanitize_one() {  # tool binary -> $jobs_dir/<tool>-<name>.{log,rc}
    local tool=$1 t=$2 name filter log rc
    name=$(basename "$t")
    log="$jobs_dir/$tool-$name.log"
    # racecheck is ~50x slower: it skips the long length-by-chunking sweeps that memcheck covers.
    # The AE sweep is a sequential state machine per warp: both tools run its short twin only.
    # The fault-injection tests make a launch fail on purpose: memcheck would report that API
    # error, so those tests (named *LaunchFailure*, or *Refused* for a call the driver refuses on
    # purpose, such as 1 PiB of page-locked memory: a test that makes one fail must be named so)
    # run on their own with API error reports off (memory checks stay on); racecheck, which
    # reports no API errors, runs them with the rest.
    filter="--gtest_filter=-*EveryLaneCountAndChunking*:*LaunchFailure*:*Refused*"
    [ "$tool" = racecheck ] && filter="--gtest_filter=-*EveryLengthAndChunking*:*SingleBlockLayout*:*EveryLaneCountAndChunking*:*BothMemoryModes*:*DenoisingEqualsTheCpuTwin*"
    if "$cs" --tool "$tool" --error-exitcode 3 "$t" $filter >"$log" 2>&1; then rc=0
    elif grep -q "terminated before first instrumented API call" "$log"; then
      rc=0; echo "gpu-check: $tool: no CUDA calls left in $t after the filter" >>"$log"   # not a finding
    else rc=1; fi
    if [ "$tool" = memcheck ] && "$t" --gtest_list_tests --gtest_filter='*LaunchFailure*:*Refused*' | grep -q '^ '; then
      echo "=== $name: fault-injection tests, API error reports off" >>"$log"
      "$cs" --tool memcheck --report-api-errors no --error-exitcode 3 "$t" \
        --gtest_filter='*LaunchFailure*:*Refused*' >>"$log" 2>&1 || rc=1
    fi
    echo "$rc" >"$jobs_dir/$tool-$name.rc"
  }
  export -f sanitize_one; export cs jobs_dir
  started=$(date +%s)
  # racecheck's jobs first: they are the long ones.
  for tool in racecheck memcheck; do for t in "$build"/tests/*cuda*_test; do echo "$tool $t"; done; done |
    xargs -P "${SANITIZE_JOBS:-6}" -L 1 bash -c 'sanitize_one "$0" "$1"'
  for tool in memcheck racecheck; do
    for t in "$build"/tests/*cuda*_test; do
      name=$(basename "$t")
      { echo "=== $tool $name"; cat "$jobs_dir/$tool-$name.log"; } >>"$out/sanitizer-$tool.log"
      summary=$(grep -E "ERROR SUMMARY|RACECHECK SUMMARY|no CUDA calls left" "$jobs_dir/$tool-$name.log" | tr '\n' ' ')
      echo "$tool $name: ${summary:-no summary}"
      if [ "$(cat "$jobs_dir/$tool-$name.rc" 2>/dev/null)" != 0 ]; then
        echo "gpu-check: $tool failed on $t"; status=1
      fi
    done
  done
  echo "gpu-check: sanitizers took $(( $(date +%s) - started )) s"
  rm -rf "$jobs_dir"
else
  echo "gpu-check: compute-sanitizer not found" | tee -a "$out/ctest.log"; status=1
fi
fi
if runs kernels; then
{
  # The CUDA benchmarks only (the CPU ones describe the machine they run on, not this one's GPU),
  # 5 repetitions of at least 0.1 s: with every benchmark at 15 repetitions of 0.5 s, convert_bench
  # and ae_hits_bench each ran past 200 s (2026-12-06, H100), the part past the device's 10 minutes.
  for b in convert_bench ae_hits_bench; do
    "$build/bench/$b" --benchmark_filter=Cuda --benchmark_repetitions=5 --benchmark_min_time=0.1 \
      --benchmark_report_aggregates_only=true 2>&1
  done
  # 15 cases of whole-stage calls: fewer repetitions keep the bench part inside the device's
  # 10 minutes (it took 593 s with 5 repetitions and 20000 crossover chunks, 2026-11-22).
  "$build/bench/fir_stage_bench" --benchmark_repetitions=3 --benchmark_min_time=0.2 --benchmark_report_aggregates_only=true 2>&1
} | tee "$out/bench.txt" | grep -E "median|Run on"
fi
if runs peers; then
# Each against its comparison in the same run (CuPy, PyTorch), into one file. (A group piped into
# tee runs in a subshell: it exits with its own status, which pipefail hands on.)
{
  st=0
  BUILD_DIR="$build" bench/fir_cuda_vs_cupy.sh || st=1
  BUILD_DIR="$build" bench/spectrum_vs_cupy.sh || st=1
  BUILD_DIR="$build" bench/denoise_vs_torch.sh || st=1
  BUILD_DIR="$build" bench/crossover_vs_torch.sh 10000 || st=1
  "$build/bench/streaming_cuda_bench" 40 || st=1
  "$build/bench/gpu_idle_bench" || st=1  # an idle GPU against pipeline.gpu_keep_warm
  exit $st
} 2>&1 | tee "$out/comparisons.txt" || status=1
fi
if runs scenarios; then
# Issue 9's end-to-end scenarios with the real vigild on the GPU backend; then S1 at 16 channels
# with each stage's time, with pipeline.gpu_resident off and on (the default: the AE stage on the
# GPU reading the denoised chunk there), paced and unpaced.
{
  st=0
  scripts/bench-scenarios.sh --backend cuda --seconds 3 --busy-poll --gro --build "$build" || st=1
  echo; echo "# S1 probes: scripts/s1_probe.py --build $build --channels C --rate-factor R [--resident]"
  for r in 1 0; do
    for resident in "" --resident; do
      python3 scripts/s1_probe.py --build "$build" --channels 16 --rate-factor $r $resident || st=1
    done
  done
  exit $st
} 2>&1 | tee "$out/scenarios.txt" || status=1
fi
if runs scaling; then
# GPU_SETS (optional): the pipeline.gpus values to try, e.g. "[0]|[0, 0]" (default: [0], then
# every power of two up to the host's GPU count).
sets=()
[ -n "${GPU_SETS:-}" ] && IFS='|' read -r -a sets <<<"$GPU_SETS"
python3 scripts/gpu_scaling.py --build "$build" ${sets[@]+--sets "${sets[@]}"} ${SCALING_CHANNELS:+--channels "$SCALING_CHANNELS"} 2>&1 |
  tee "$out/scaling.txt" || status=1
fi
exit $status
