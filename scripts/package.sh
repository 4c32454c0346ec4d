#!/usr/bin/env bash
# Builds the Debian package of the CPU backend (prefix /usr: /usr/bin/vigild, /etc/vigil/vigil.yaml,
# /usr/lib/systemd/system/vigild.service, /usr/lib/sysusers.d/vigil.conf) into build-pkg/.
# A CUDA build for a particular machine: VIGIL_CUDA=ON scripts/package.sh on that machine.
set -euo pipefail
cd "$(dirname "$0")/.."
build=build-pkg
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=/usr \
  -DVIGIL_CUDA="${VIGIL_CUDA:-OFF}" -DVIGIL_BUILD_TESTS=OFF -DVIGIL_BUILD_BENCH=OFF >/dev/null
cmake --build "$build" -j "$(nproc)"
(cd "$build" && cpack -G DEB)
ls "$build"/vigil_*.deb
