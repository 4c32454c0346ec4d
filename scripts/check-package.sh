#!/usr/bin/env bash
# CI (root, a clean Debian 12 machine): installs the .deb that scripts/package.sh built, checks that
# the installed vigild accepts the installed config, that the unit and the vigil user are in place,
# runs the installed vigild briefly, then removes the package.
set -euo pipefail
cd "$(dirname "$0")/.."
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
