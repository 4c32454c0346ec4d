#!/usr/bin/env bash
# Vigil for Jetson's architecture, tested on an x86-64 Debian 12 machine: cross-builds for aarch64
# with JetPack 6's compiler (GCC 11; Debian's aarch64-linux-gnu-g++-11) against Debian's arm64
# libraries (multiarch), then runs the whole test suite under qemu-user, integration tests
# included (they start vigild, vigil-listen and vigil-dsp through the emulator). Tests that the
# emulator cannot run carry the label native-only; they are listed with the reason, left out here,
# and run by the native suite (scripts/test.sh). Ends with ctest's own summary line.
# Installs what it needs with apt-get (as root, or through sudo).
# Usage: scripts/test-aarch64.sh [--build-only | --apps-only]   (--apps-only: vigild, vigil-listen and
# vigil-dsp alone, for scripts/package.sh --arch arm64)
# Environment: BUILD_DIR (default build-aarch64), VIGIL_CROSS_CXX (default aarch64-linux-gnu-g++-11),
# VIGIL_WEB (AUTO|ON|OFF, as scripts/build.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
build="${BUILD_DIR:-build-aarch64}"
cxx="${VIGIL_CROSS_CXX:-aarch64-linux-gnu-g++-11}"
targets=(vigil_tests)
run_tests=1
case "${1:-}" in
  "") ;;
  --build-only) run_tests=0 ;;
  --apps-only) run_tests=0; targets=(vigild vigil-listen vigil-dsp) ;;
  *) echo "usage: scripts/test-aarch64.sh [--build-only | --apps-only]" >&2; exit 2 ;;
esac

scripts/install-deps.sh --aarch64
# Debian's libyaml-cpp-dev cannot be installed for two architectures at once (it is not
# Multi-Arch: same): its arm64 headers and CMake files go into the build folder instead, beside
# the arm64 runtime library that multiarch installed.
extra="$PWD/$build/arm64-extra"
if [ ! -f "$extra/usr/lib/aarch64-linux-gnu/cmake/yaml-cpp/yaml-cpp-config.cmake" ]; then
  mkdir -p "$extra"
  tmp=$(mktemp -d)
  chmod a+rwx "$tmp"  # apt's download user writes there
  (cd "$tmp" && apt-get download -q libyaml-cpp-dev:arm64 >/dev/null)
  dpkg -x "$tmp"/libyaml-cpp-dev_*_arm64.deb "$extra"
  rm -rf "$tmp"
  ln -sf /usr/lib/aarch64-linux-gnu/libyaml-cpp.so.* "$extra/usr/lib/aarch64-linux-gnu/"
fi

# Prefix /usr: the same build makes the arm64 package (scripts/package.sh --arch arm64), so the
# programs packaged are the ones tested here.
toolchain=()  # given once: the build folder's cache keeps it
[ -f "$build/CMakeCache.txt" ] || toolchain=(-DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake)
cmake -S . -B "$build" -G Ninja "${toolchain[@]}" \
  -DVIGIL_CROSS_CXX="$cxx" -DVIGIL_CROSS_EXTRA_PREFIX="$extra/usr" -DCMAKE_INSTALL_PREFIX=/usr \
  -DVIGIL_CUDA=OFF -DVIGIL_WEB="${VIGIL_WEB:-AUTO}" >/dev/null
cmake --build "$build" -j "$(nproc)" --target "${targets[@]}"
[ $run_tests -eq 1 ] || exit 0

cd "$build"
native=$(ctest -N -L native-only | grep -c 'Test *#' || true)
echo "test-aarch64: $(ctest -N | grep -c 'Test *#') tests; $native run natively only (scripts/test.sh runs them), because:"
sed 's/^/  /' native-only.txt
echo "test-aarch64: the rest under $(qemu-aarch64 --version | head -1)"
ctest --output-on-failure -j "$(nproc)" -LE native-only
