#!/usr/bin/env bash
# Configures and builds Vigil into ./build (Release with debug info).
# Environment: VIGIL_CUDA=AUTO|ON|OFF (default AUTO), VIGIL_CUDA_ARCH (e.g. 90; default 87;90),
# VIGIL_WEB=AUTO|ON|OFF (vigil-listen's web view; needs npm to fetch uPlot at configure time),
# VIGIL_FFTW_PREFIX (an FFTW from scripts/build-fftw.sh instead of the system's), BUILD_DIR
# (default build).
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir="${BUILD_DIR:-build}"
args=(-S . -B "$build_dir" -G Ninja -DVIGIL_CUDA="${VIGIL_CUDA:-AUTO}" -DVIGIL_WEB="${VIGIL_WEB:-AUTO}")
[ -n "${VIGIL_CUDA_ARCH:-}" ] && args+=(-DCMAKE_CUDA_ARCHITECTURES="$VIGIL_CUDA_ARCH")
[ -n "${VIGIL_FFTW_PREFIX:-}" ] && args+=(-DVIGIL_FFTW_PREFIX="$VIGIL_FFTW_PREFIX")
cmake "${args[@]}" >/dev/null
cmake --build "$build_dir" -j "$(nproc)"
