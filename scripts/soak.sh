#!/usr/bin/env bash
# The soak test (docs/RELIABILITY.md): the real vigild at RATE_FACTOR x real time for SECONDS
# with its output counted on loopback: no gap, no drop, RSS growth <= 1 MiB after warm-up,
# constant descriptors. Builds what it needs in ${BUILD_DIR:-build} (after scripts/test.sh).
# Usage: scripts/soak.sh [SECONDS=600] [RATE_FACTOR=20]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-600}"
rate="${2:-20}"
build="${BUILD_DIR:-build}"
cmake --build "$build" -j "$(nproc)" --target soak_test vigild >/dev/null
VIGIL_SOAK_SECONDS="$seconds" VIGIL_SOAK_RATE_FACTOR="$rate" "$build/tests/soak_test"
