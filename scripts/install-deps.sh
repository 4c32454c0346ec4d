#!/usr/bin/env bash
# Installs Vigil's build and test dependencies on Debian 12 / Ubuntu 22.04+ (apt-get).
# Skips apt entirely when every package is already installed. CUDA is optional: install the
# CUDA Toolkit (nvcc) separately to build the GPU backend.
# --aarch64: also what the aarch64 cross build needs (scripts/deps-debian-arm64.txt: the cross
# compiler, qemu-user, the arm64 libraries), adding arm64 to dpkg's architectures (x86-64 Debian).
# --tests: also, best effort, what only tests and the web view need when the machine lacks it:
# npm (to fetch uPlot and playwright-core for the web view) and Chromium (the browser test). A
# machine where they cannot be installed still builds and tests everything else (the web view is
# then not built, or its browser test skips with the reason).
set -euo pipefail
cd "$(dirname "$0")/.."
sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
mapfile -t pkgs < <(grep -v '^#' scripts/deps-debian.txt | sed '/^$/d')
if [ "${1:-}" = "--aarch64" ]; then
  if ! dpkg --print-foreign-architectures | grep -qx arm64; then
    echo "install-deps: adding arm64 to dpkg's architectures (multiarch) for the cross build"
    $sudo dpkg --add-architecture arm64
  fi
  mapfile -t -O ${#pkgs[@]} pkgs < <(grep -v '^#' scripts/deps-debian-arm64.txt | sed '/^$/d')
fi
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
updated=0
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#pkgs[@]} packages present"
else
  echo "install-deps: installing ${missing[*]}"
  $sudo apt-get update -qq
  updated=1
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}"
  # iiod comes for the IIO source's tests, which start their own: its package's service would serve
  # this machine's IIO devices on the network, so the one installed here is left stopped.
  if printf '%s\n' "${missing[@]}" | grep -qx iiod && command -v systemctl >/dev/null; then
    $sudo systemctl disable --now iiod >/dev/null 2>&1 || true
    echo "install-deps: iiod installed for the tests, its service left disabled (systemctl enable --now iiod serves this machine's IIO devices)"
  fi
fi
if [ "${1:-}" = "--tests" ]; then
  extra=()
  command -v npm >/dev/null || extra+=(npm)  # not over a Node.js that came with its own npm
  [ -x /usr/bin/chromium ] || [ -x /usr/bin/chromium-browser ] || extra+=(chromium)
  if [ ${#extra[@]} -gt 0 ]; then
    echo "install-deps: installing for the web view and its browser test: ${extra[*]}"
    [ $updated -eq 1 ] || $sudo apt-get update -qq || true
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${extra[@]}" ||
      echo "install-deps: could not install ${extra[*]}: the web view or its browser test will be left out (see docs/TOOLS.md)"
  fi
fi
# CUDA is not installed here (NVIDIA's packages; on a Jetson, JetPack's): say whether the GPU backend
# will be built. CMake finds nvcc on PATH or in /usr/local/cuda/bin, where JetPack puts it.
[ "${1:-}" = "--aarch64" ] && exit 0  # the cross build is the CPU backend's: no aarch64 CUDA toolkit here
nvcc_path=$(command -v nvcc || true)
[ -z "$nvcc_path" ] && [ -x /usr/local/cuda/bin/nvcc ] && nvcc_path=/usr/local/cuda/bin/nvcc
if [ -n "$nvcc_path" ]; then
  release=$("$nvcc_path" --version | sed -n 's/.*release \([0-9.]*\).*/\1/p')
  echo "install-deps: CUDA $release ($nvcc_path): the GPU backend is built (CUDA 12.0 or later)"
else
  echo "install-deps: no CUDA Toolkit (nvcc on PATH or in /usr/local/cuda/bin): the CPU backend only" \
       "(a Jetson: sudo apt-get install nvidia-jetpack; a desktop: NVIDIA's cuda-toolkit)"
fi
