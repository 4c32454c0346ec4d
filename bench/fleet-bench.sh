#!/usr/bin/env bash
# The fleet output measured on this machine with the whole fleet on loopback (docs/FLEET.md's
# topology): a 3-node JetStream cluster (domain central), a leaf node (domain edge1) sourced by the
# central stream FLEET (3 replicas), and bench/fleet_bench publishing to the leaf as vigild does.
# Prints one JSON line per measurement: acknowledged events per CPU-second (--flood), and the
# latency from an event's creation to the central consumer at the default config's event rate
# (20 a second: measured from vigild's default config, bench/results/) and at 100 times it.
# Usage: bench/fleet-bench.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build}"
dir=$(mktemp -d)
pids=()
cleanup() { kill "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$dir"; }
trap cleanup EXIT
base=$((20000 + RANDOM % 20000))
routes="nats-route://127.0.0.1:$((base + 11)), nats-route://127.0.0.1:$((base + 12)), nats-route://127.0.0.1:$((base + 13))"
for i in 1 2 3; do
  cat > "$dir/n$i.conf" <<CONF
server_name: n$i
listen: 127.0.0.1:$((base + i))
jetstream { store_dir: "$dir/n$i", domain: central }
cluster { name: central, listen: 127.0.0.1:$((base + 10 + i)), routes: [$routes] }
leafnodes { listen: 127.0.0.1:$((base + 20 + i)) }
CONF
done
cat > "$dir/leaf.conf" <<CONF
server_name: leaf1
listen: 127.0.0.1:$((base + 30))
jetstream { store_dir: "$dir/leaf", domain: edge1 }
leafnodes { remotes: [ { urls: ["nats-leaf://127.0.0.1:$((base + 21))", "nats-leaf://127.0.0.1:$((base + 22))"] } ] }
CONF
for c in n1 n2 n3 leaf; do nats-server -c "$dir/$c.conf" 2>"$dir/$c.log" & pids+=($!); done
central="nats://127.0.0.1:$((base + 1))"
leaf="nats://127.0.0.1:$((base + 30))"
for _ in $(seq 60); do
  "$build/apps/vigil-listen" --nats "$central" --create-fleet-stream FLEET --source-domains edge1 --replicas 3 \
    >/dev/null 2>&1 && break
  sleep 0.5
done
echo "{\"machine\":\"$(nproc) cores, $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1)\",\"nats_server\":\"$(nats-server --version)\"}"
"$build/bench/fleet_bench" --leaf "$leaf" --flood 200000
"$build/bench/fleet_bench" --leaf "$leaf" --central "$central" --rate 20 --seconds 30
"$build/bench/fleet_bench" --leaf "$leaf" --central "$central" --rate 2000 --seconds 30
