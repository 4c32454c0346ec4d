#!/usr/bin/env bash
# The README's second command (and what CI runs): installs what is missing, builds, runs every
# test with ctest. GPU tests skip with the reason when no CUDA device is present.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --tests
scripts/build.sh
cd "${BUILD_DIR:-build}"
ctest --output-on-failure -j "$(nproc)"
