#!/usr/bin/env bash
# Builds the Debian package of the CPU backend (prefix /usr: /usr/bin/vigild, /etc/vigil/vigil.yaml,
# /usr/lib/systemd/system/vigild.service, /usr/lib/sysusers.d/vigil.conf).
#   scripts/package.sh               this machine's architecture, into build-pkg/
#   scripts/package.sh --arch arm64  an arm64 package (a Jetson's) cross-built on x86-64 Debian 12,
#                                    from the build scripts/test-aarch64.sh tests (build-aarch64/):
#                                    its dependencies computed against the arm64 libraries
# A CUDA build for a particular machine: VIGIL_CUDA=ON scripts/package.sh on that machine (a Jetson
# builds its own with the GPU backend; there is no aarch64 CUDA toolkit to cross-build against).
set -euo pipefail
cd "$(dirname "$0")/.."
arch=""
case "${1:-}" in
  "") ;;
  --arch) arch="${2:-}" ;;
  *) echo "usage: scripts/package.sh [--arch arm64]" >&2; exit 2 ;;
esac
if [ -n "$arch" ] && [ "$arch" != "$(dpkg --print-architecture)" ]; then
  [ "$arch" = arm64 ] || { echo "package: --arch $arch: only arm64 is cross-built" >&2; exit 2; }
  build="${BUILD_DIR:-build-aarch64}"
  BUILD_DIR="$build" scripts/test-aarch64.sh --apps-only
  # dpkg-shlibdeps looks for the libraries of the package's architecture: arm64's multiarch folders.
  (cd "$build" && eval "$(dpkg-architecture -a arm64 -s 2>/dev/null)" && cpack -G DEB)
  ls "$build"/vigil_*_arm64.deb
  exit 0
fi
build=build-pkg
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=/usr \
  -DVIGIL_CUDA="${VIGIL_CUDA:-OFF}" -DVIGIL_BUILD_TESTS=OFF -DVIGIL_BUILD_BENCH=OFF >/dev/null
cmake --build "$build" -j "$(nproc)"
(cd "$build" && cpack -G DEB)
ls "$build"/vigil_*.deb
