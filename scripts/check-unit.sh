#!/usr/bin/env bash
# Checks the generated systemd/vigild.service: `systemd-analyze verify` must print nothing (it exits 0 even on
# unknown keys, so any output fails), and `systemd-analyze security --offline=true` must rate the
# unit's exposure at most 2.0. Works without systemd running (as in CI). The unit's ExecStart
# binary must exist for verify, so a copy pointing at the built vigild is checked.
set -euo pipefail
cd "$(dirname "$0")/.."
build="${BUILD_DIR:-build}"
command -v systemd-analyze >/dev/null || { echo "check-unit: systemd-analyze not found (apt-get install systemd)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
unit="$build/systemd/vigild.service"   # generated from systemd/vigild.service.in by CMake
[ -f "$unit" ] || { echo "check-unit: $unit not found: build first (scripts/build.sh)" >&2; exit 2; }
sed "s|^ExecStart=[^ ]*/vigild |ExecStart=$(realpath "$build/apps/vigild") |" "$unit" >"$tmp/vigild.service"
verify=$(systemd-analyze verify "$tmp/vigild.service" 2>&1 || true)
if [ -n "$verify" ]; then
  echo "check-unit: systemd-analyze verify complained:"; echo "$verify"; exit 1
fi
security=$(systemd-analyze security --offline=true "$tmp/vigild.service" 2>&1 || true)
level=$(echo "$security" | sed -n 's/.*Overall exposure level for .*: \([0-9.]*\).*/\1/p' | tail -1)
if [ -z "$level" ]; then
  echo "check-unit: no exposure level in the output:"; echo "$security"; exit 1
fi
echo "check-unit: verify clean; exposure level $level (limit 2.0)"
awk -v l="$level" 'BEGIN { exit !(l <= 2.0) }' || { echo "$security" | grep -E "✗" | head -30; exit 1; }
