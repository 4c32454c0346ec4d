#!/usr/bin/env bash
# Scenario run: vigild on the built-in default config for SECONDS (default 60) with vigil-listen
# counting on the default ports. Prints vigild's final status line and vigil-listen's summary
# (per-stream samples and gaps). Build first (scripts/build.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
build="${BUILD_DIR:-build}"
tmp=$(mktemp -d)
"$build/apps/vigil-listen" --json --quiet --seconds "$((seconds + 3))" >"$tmp/listen.jsonl" &
listen=$!
sleep 0.3
"$build/apps/vigild" --seconds "$seconds" --log-interval 0 2>"$tmp/vigild.log"
wait $listen
echo "vigild final status:"
grep -E "chunks in" "$tmp/vigild.log" | tail -1
python3 - "$tmp/listen.jsonl" <<'PY'
import json, sys
s = [json.loads(l) for l in open(sys.argv[1]) if '"summary"' in l][-1]
samples = sorted({x["samples"] for x in s["streams"]})
print(f"vigil-listen: {len(s['streams'])} streams, samples per stream {samples}, "
      f"gaps {sum(x['gaps'] for x in s['streams'])}, timestamp errors {sum(x['timestamp_errors'] for x in s['streams'])}, "
      f"events {s['events']} (seq gaps {s['event_gaps']}), malformed {s['malformed']}")
PY
rm -rf "$tmp"
