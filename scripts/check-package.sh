#!/usr/bin/env bash
# CI (root, a clean Debian 12 machine): installs the .deb that scripts/package.sh built, checks that
# the installed vigild accepts the installed config, that the unit and the vigil user are in place,
# runs the installed vigild briefly, then removes the package.
#   scripts/check-package.sh --arch arm64: the cross-built arm64 package (scripts/package.sh --arch
#   arm64) cannot be installed here: its architecture, dependencies, files and conffiles are checked
#   with dpkg-deb, and its vigild, unpacked, validates its config and runs under qemu-user.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = "--arch" ] && [ "${2:-}" = arm64 ]; then
  deb=$(ls "${BUILD_DIR:-build-aarch64}"/vigil_*_arm64.deb | head -1)
  fail() { echo "check-package: $deb: $*" >&2; exit 1; }
  [ "$(dpkg-deb -f "$deb" Architecture)" = arm64 ] || fail "Architecture is $(dpkg-deb -f "$deb" Architecture), not arm64"
  depends=$(dpkg-deb -f "$deb" Depends)
  echo "check-package: Depends: $depends"
  # What dpkg-shlibdeps found in the arm64 binaries: the C and C++ runtimes and every library the
  # CPU backend links (a dependency computed against the build machine's amd64 libraries, or none
  # at all, would show here as a missing name).
  names=$(echo "$depends" | tr ',' '\n' | sed 's/^ *//; s/ .*//')
  for lib in libc6 libstdc++6 libgcc-s1 libyaml-cpp0.7 libfftw3-single3 libssl3 libnats3.4 libiio0 libasound2 libsndfile1 libsystemd0 systemd; do
    echo "$names" | grep -qxF "$lib" || fail "Depends lacks $lib"
  done
  files=$(dpkg-deb -c "$deb" | awk '{print $6}')
  for f in ./usr/bin/vigild ./usr/bin/vigil-listen ./usr/bin/vigil-dsp ./etc/vigil/vigil.yaml \
           ./usr/lib/systemd/system/vigild.service ./usr/lib/sysusers.d/vigil.conf; do
    echo "$files" | grep -qx "$f" || fail "no $f in the package"
  done
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  dpkg-deb -e "$deb" "$tmp/DEBIAN"
  grep -qx /etc/vigil/vigil.yaml "$tmp/DEBIAN/conffiles" || fail "/etc/vigil/vigil.yaml is not a conffile"
  dpkg-deb -x "$deb" "$tmp/root"
  for b in vigild vigil-listen vigil-dsp; do
    machine=$(readelf -h "$tmp/root/usr/bin/$b" | sed -n 's/ *Machine: *//p')
    [ "$machine" = AArch64 ] || fail "usr/bin/$b is built for $machine"
    readelf -S "$tmp/root/usr/bin/$b" | grep -q '\.debug_info' && fail "usr/bin/$b is not stripped"
  done
  qemu-aarch64 "$tmp/root/usr/bin/vigild" --check-config "$tmp/root/etc/vigil/vigil.yaml" --no-lookup ||
    fail "its vigild refuses its own config"
  qemu-aarch64 "$tmp/root/usr/bin/vigild" --config "$tmp/root/etc/vigil/vigil.yaml" --seconds 1 --log-interval 0 ||
    fail "its vigild did not run"
  echo "check-package: $deb: arm64, its dependencies computed against the arm64 libraries, its files and" \
       "conffile in place; its vigild validates and runs its config under qemu"
  exit 0
fi
deb=$(ls build-pkg/vigil_*.deb | head -1)
apt-get install -y -qq "./$deb"   # resolves the package's dependencies, as dpkg -i would need
dpkg -s vigil | grep -E '^(Version|Depends):'
/usr/bin/vigild --check-config /etc/vigil/vigil.yaml
test -f /usr/lib/systemd/system/vigild.service
test -f /usr/lib/sysusers.d/vigil.conf
grep -q '^ExecStart=/usr/bin/vigild --config /etc/vigil/vigil.yaml' /usr/lib/systemd/system/vigild.service
id vigil
test "$(stat -c '%a %U %G' /etc/vigil/vigil.yaml)" = "640 root vigil"   # readable by the service, not by others
dpkg -L vigil | grep -q '^/etc/vigil/vigil.yaml$'
grep -q '/etc/vigil/vigil.yaml' /var/lib/dpkg/info/vigil.conffiles   # an operator's edits survive upgrades
/usr/bin/vigild --config /etc/vigil/vigil.yaml --seconds 1 --log-interval 0
dpkg -r vigil
echo "check-package: $deb installs, validates its config, runs, and removes cleanly"
