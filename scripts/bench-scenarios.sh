#!/usr/bin/env bash
# End-to-end scenario benchmarks (issue 9): the real vigild on bench/scenarios/*.yaml at increasing
# load with vigil-listen on loopback; a table per scenario and the highest load with zero deadline
# misses and zero drops. Usage: scripts/bench-scenarios.sh [--backend cpu|cuda|auto] [--seconds S]
#   [--only s1,s2,s3] [--build DIR] [--json FILE] [--busy-poll] [--gro] [--steps SCEN:CHxRF,...] [--repeat N]
#   [--threads SCEN:N]
#   [--gnuradio [--gnuradio-rounds N]] [--peers [--peers-rounds N] [--peers-signal-s S]]
#   (scripts/bench_scenarios.py --help)
set -euo pipefail
cd "$(dirname "$0")/.."
exec python3 scripts/bench_scenarios.py "$@"
