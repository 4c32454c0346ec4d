#!/usr/bin/env bash
# Builds FFTW 3.3.10 in single precision (what Vigil's CPU backend uses) with every SIMD kind FFTW
# has for this architecture, into PREFIX (default /opt/vigil-fftw). Debian's and Ubuntu's amd64
# libfftw3f carry SSE and AVX codelets only, none for AVX2, FMA or AVX-512. On a 2-vCPU Xeon guest
# (AVX-512) vigild ran S3 1.13x as fast with this build and S2 alike (within 5 %; its FIR bank
# alone 1.2-1.3x; bench/results/LOG.md §11, third session of 28 Nov). FFTW picks its codelets by
# CPUID at run time, so the library still runs on any x86-64 CPU. (arm64's packages are built
# with NEON already; this builds the same there.)
#
# Then build Vigil against it: VIGIL_FFTW_PREFIX=PREFIX scripts/build.sh (or cmake
# -DVIGIL_FFTW_PREFIX=PREFIX); vigild's start line names the FFTW it runs with.
# Needs: a C compiler, make, curl or wget; network access to deb.debian.org.
set -euo pipefail
prefix=${1:-/opt/vigil-fftw}
url=http://deb.debian.org/debian/pool/main/f/fftw3/fftw3_3.3.10.orig.tar.gz
sha256=56c932549852cddcfafdab3820b0200c7742675be92179e59e6215b340e26467  # = fftw.org's fftw-3.3.10.tar.gz

case "$(uname -m)" in
  x86_64) simd="--enable-sse2 --enable-avx --enable-avx2 --enable-avx512" ;;
  aarch64) simd="--enable-neon" ;;
  *) simd="" ;;
esac

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "build-fftw: fetching $url"
if command -v curl >/dev/null; then
  curl -fsSL -o "$work/fftw.tar.gz" "$url"
else
  wget -q -O "$work/fftw.tar.gz" "$url"
fi
echo "$sha256  $work/fftw.tar.gz" | sha256sum -c --quiet - || { echo "build-fftw: checksum mismatch" >&2; exit 1; }
tar -xzf "$work/fftw.tar.gz" -C "$work"
cd "$work/fftw-3.3.10"
echo "build-fftw: configuring (single precision, shared, threads, SIMD: ${simd:-none}) for $prefix"
./configure --prefix="$prefix" --enable-single --enable-shared --disable-static --enable-threads \
  --disable-fortran $simd >"$work/configure.log" 2>&1 || { tail -30 "$work/configure.log"; exit 1; }
echo "build-fftw: compiling (a few minutes on two cores)"
make -j "$(nproc)" >"$work/make.log" 2>&1 || { tail -30 "$work/make.log"; exit 1; }
sudo=""
if [ ! -w "$(dirname "$prefix")" ] && [ "$(id -u)" -ne 0 ]; then sudo=sudo; fi
$sudo make install >"$work/install.log" 2>&1 || { tail -30 "$work/install.log"; exit 1; }
echo "build-fftw: installed in $prefix"
echo "build-fftw: now VIGIL_FFTW_PREFIX=$prefix scripts/build.sh"
