#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz/) with clang, AddressSanitizer, UndefinedBehavior-
# Sanitizer and coverage, and runs each for SECONDS (default 60) from its seed corpus in
# tests/fuzz/corpus/TARGET. A crash, a sanitizer report, a leak, an input that takes over 10 s
# or memory over 2 GiB fails the run; the reproducer is left in build-fuzz/findings/ (add it to
# the corpus once fixed: the test suite then replays it forever).
# Usage: scripts/fuzz.sh [SECONDS] [TARGET...]   targets: config vita49 vita49_source recording event_json listen_event
#        fleet_message
set -uo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
shift || true
targets="${*:-config vita49 vita49_source recording event_json listen_event fleet_message}"
build=build-fuzz
flags="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
CC=clang CXX=clang++ cmake -S . -B "$build" -G Ninja -DVIGIL_CUDA=OFF -DVIGIL_BUILD_TESTS=OFF -DVIGIL_BUILD_BENCH=OFF \
  -DVIGIL_BUILD_FUZZ=ON -DVIGIL_WEB=OFF -DVIGIL_LINK_GOLD=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS="$flags" \
  -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" >/dev/null || exit 1
cmake --build "$build" -j "$(nproc)" --target $(for t in $targets; do echo "fuzz_$t"; done) || exit 1
out="$build/findings"
mkdir -p "$out"
status=0
for t in $targets; do
  work=$(mktemp -d)
  if "$build/tests/fuzz/fuzz_$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
      -artifact_prefix="$out/$t-" "$work" "tests/fuzz/corpus/$t" >"$out/$t.log" 2>&1; then
    runs=$(grep -o "stat::number_of_executed_units: *[0-9]*" "$out/$t.log" | grep -o "[0-9]*$")
    rss=$(grep -o "stat::peak_rss_mb: *[0-9]*" "$out/$t.log" | grep -o "[0-9]*$")
    echo "fuzz_$t: ${seconds} s, ${runs} inputs, peak RSS ${rss} MB, corpus $(ls "$work" | wc -l) inputs: no finding"
  else
    tail -40 "$out/$t.log"
    echo "fuzz_$t: FAILED (reproducer in $out/)"
    status=1
  fi
  rm -rf "$work"
done
exit $status
