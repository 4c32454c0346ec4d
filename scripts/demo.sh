#!/usr/bin/env bash
# The README's first command: installs what is missing, builds, then runs vigild on its built-in
# default config (synthetic 4-channel signal at 51.2 kHz, real time, UDP to 127.0.0.1:4991/4992)
# with vigil-listen showing what arrives. Runs for SECONDS (default 15) or until Ctrl-C.
# --web: vigil-listen also serves the live view at http://127.0.0.1:8080/ (open it in a browser).
# Usage: scripts/demo.sh [--web] [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
web=()
if [ "${1:-}" = "--web" ]; then
  web=(--web "${VIGIL_WEB_ADDRESS:-127.0.0.1:8080}" --quiet)
  shift
fi
seconds="${1:-15}"
scripts/install-deps.sh
scripts/build.sh
build_dir="${BUILD_DIR:-build}"
if [ ${#web[@]} -gt 0 ] && ! "$build_dir/apps/vigil-listen" --help | grep -q -- --web; then
  echo "demo: this build has no web view (VIGIL_WEB: it needs npm to fetch uPlot, see docs/TOOLS.md)" >&2
  exit 2
fi
"$build_dir/apps/vigil-listen" --seconds "$((seconds + 2))" "${web[@]}" &
listen_pid=$!
trap 'kill $listen_pid 2>/dev/null || true' EXIT
sleep 0.3
"$build_dir/apps/vigild" --seconds "$seconds" --log-interval 5
wait $listen_pid
