#!/usr/bin/env bash
# Slow read (slowhttptest -X) in a private network namespace whose loopback has an Ethernet MTU.
#
# Why: on the host's loopback (MTU 65536) Linux sizes a new connection's send buffer from a
# 64 KiB MSS, so each slow reader parks ~1.7 MB in the server's socket buffer at once, which
# the minimum response rate counts as accepted. With MTU 1500, as for a real client, it is
# ~30 KB: this run shows when the server sheds slow readers in that setting. Samples the
# server's open fds and asks /healthz every 5 s. Needs root (ip netns); traffic stays inside the
# namespace.
#
#   cargo build --release -p weir --example bulk
#   sudo scripts/slow-read-netns.sh [path/to/bulk] [connections] [seconds]
set -euo pipefail

BULK=${1:-target/release/examples/bulk}
CONNECTIONS=${2:-200}
DURATION=${3:-300}
NS=weir-slow-read-$$
OUT=$(mktemp -d /tmp/weir-slow-read.XXXXXX)

ip netns add "$NS"
cleanup() {
    kill "${BULK_PID:-}" "${SLOW_PID:-}" 2>/dev/null || true
    ip netns del "$NS" 2>/dev/null || true
}
trap cleanup EXIT
ip netns exec "$NS" ip link set lo up
ip netns exec "$NS" ip link set lo mtu 1500

ip netns exec "$NS" "$BULK" 127.0.0.1:8081 >"$OUT/bulk.log" 2>&1 &
BULK_PID=$!
sleep 0.5
ip netns exec "$NS" slowhttptest -X -c "$CONNECTIONS" -r 50 -k 1 -w 512 -y 1024 -n 5 -z 32 \
    -u http://127.0.0.1:8081/bulk -p 3 -l "$DURATION" -g -o "$OUT/slow-read" >"$OUT/slow-read.log" 2>&1 &
SLOW_PID=$!

good=0
total=0
for t in $(seq 0 5 "$DURATION"); do
    fds=$(ls /proc/$BULK_PID/fd | wc -l)
    code=$(ip netns exec "$NS" curl -s -o /dev/null --max-time 5 -w '%{http_code}' http://127.0.0.1:8081/healthz || true)
    total=$((total + 1))
    [ "$code" = 200 ] && good=$((good + 1))
    echo "$t s: server fds $fds, /healthz $code"
    sleep 5
done
echo "good client: $good/$total answered 200"
echo "results in $OUT"
