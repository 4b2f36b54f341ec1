#!/usr/bin/env bash
# Slow-client attacks with slowhttptest against `weir serve`, while a well-behaved client keeps
# asking for /healthz: slowloris (-H), slow body (-B) and slow read (-X), a few hundred
# connections each. Prints, per attack, slowhttptest's own summary and the good client's
# success rate. Manual run (not CI); see docs/RELIABILITY.md for the recorded results.
#
#   apt-get install -y slowhttptest
#   cargo build --release -p weir-cli
#   scripts/slow-clients.sh [path/to/weir] [seconds per attack]
#
# Traffic goes to 127.0.0.1 only.
set -euo pipefail

WEIR=${1:-target/release/weir}
SECONDS_PER_ATTACK=${2:-90}
# A free port, chosen by the kernel (a fixed one may belong to someone else's server).
PORT=${PORT:-$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')}
CONNECTIONS=${CONNECTIONS:-500}
URL="http://127.0.0.1:$PORT"
OUT=$(mktemp -d /tmp/weir-slow.XXXXXX)
ROOT="$OUT/root"
mkdir -p "$ROOT"

command -v slowhttptest >/dev/null || { echo "slowhttptest is not installed" >&2; exit 1; }
command -v curl >/dev/null || { echo "curl is not installed" >&2; exit 1; }

"$WEIR" serve --listen "127.0.0.1:$PORT" --root "$ROOT" >"$OUT/weir.log" 2>&1 &
WEIR_PID=$!
# The server under attack (weir serve; the bulk example for slow read when it has to stand in).
TARGET_PID=$WEIR_PID
trap 'kill $WEIR_PID 2>/dev/null || true' EXIT
for _ in $(seq 50); do
    curl -fs "$URL/healthz" >/dev/null 2>&1 && break
    sleep 0.1
done
# Make sure the server answering is ours.
if ! kill -0 "$WEIR_PID" 2>/dev/null || ! ss -ltnp | grep -q ":$PORT .*pid=$WEIR_PID,"; then
    echo "weir did not start on port $PORT:" >&2
    cat "$OUT/weir.log" >&2
    exit 1
fi

# A good client: one /healthz every 100 ms for the length of the attack, 5 s allowed each.
good_client() {
    local log=$1 until=$((SECONDS + SECONDS_PER_ATTACK))
    : >"$log"
    while [ $SECONDS -lt $until ]; do
        curl -s -o /dev/null --max-time 5 -w '%{http_code} %{time_total}\n' "$URL/healthz" >>"$log" || true
        sleep 0.1
    done
}

report_good() {
    local log=$1
    local total ok worst
    total=$(wc -l <"$log")
    ok=$(grep -c '^200 ' "$log" || true)
    worst=$(awk '{ if ($2 > m) m = $2 } END { printf "%.3f", m }' "$log")
    echo "good client: $ok/$total answered 200 (slowest ${worst}s)"
}

server_state() {
    if ! kill -0 "$TARGET_PID" 2>/dev/null; then
        echo "server: NOT RUNNING"
        return
    fi
    local fds rss
    fds=$(ls /proc/$TARGET_PID/fd | wc -l)
    rss=$(awk '/VmRSS/ { print $2 }' /proc/$TARGET_PID/status)
    echo "server (pid $TARGET_PID): ${fds} open fds, RSS ${rss} kB"
}

run() {
    local name=$1; shift
    echo "== $name: slowhttptest $*"
    good_client "$OUT/$name.good" &
    local good=$!
    slowhttptest "$@" -l "$SECONDS_PER_ATTACK" -g -o "$OUT/$name" >"$OUT/$name.log" 2>&1 || true
    wait $good
    # slowhttptest's last status block: connections pending/connected/closed and availability.
    grep -E 'pending|connected|error|closed|service available' "$OUT/$name.log" | tail -6
    report_good "$OUT/$name.good"
    server_state
    echo "temporary upload files left: $(find "$ROOT" -name '.*tmp*' | wc -l)"
}

# Slowloris: a header line every 10 s, never finishing the head (head timeout: 30 s).
run slowloris -H -c "$CONNECTIONS" -r 100 -i 10 -s 8192 -t GET -u "$URL/healthz" -x 24 -p 3
# Slow body: a promised 1 MB upload sent a few bytes every 2 s: every read makes progress and
# the interval is far below any idle timeout, so only the minimum body rate can stop it.
run slow-body -B -c "$CONNECTIONS" -r 100 -i 2 -s 1000000 -t PUT -u "$URL/files/slow-body" -x 10 -p 3
# Slow read: a large response, a 512-1024 byte receive window and 32 bytes read every 5 s:
# only the minimum response rate can stop it. It needs a large response: a file uploaded to
# `weir serve` when this build serves downloads, else the library's `bulk` example
# (`cargo build --release -p weir --example bulk`), started here on its own port.
SLOW_READ_URL=""
head -c $((64 * 1024 * 1024)) /dev/zero >"$OUT/big"
if curl -fs -T "$OUT/big" "$URL/files/slow-read" >/dev/null \
    && [ "$(curl -fs "$URL/files/slow-read" | wc -c)" = $((64 * 1024 * 1024)) ]; then
    SLOW_READ_URL="$URL/files/slow-read"
else
    BULK=${BULK:-$(dirname "$WEIR")/examples/bulk}
    BULK_PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    if [ -x "$BULK" ]; then
        "$BULK" "127.0.0.1:$BULK_PORT" >"$OUT/bulk.log" 2>&1 &
        BULK_PID=$!
        trap 'kill $WEIR_PID $BULK_PID 2>/dev/null || true' EXIT
        sleep 0.5
        SLOW_READ_URL="http://127.0.0.1:$BULK_PORT/bulk"
        echo "(weir serve has no download route in this build: slow read goes to $BULK, pid $BULK_PID)"
        TARGET_PID=$BULK_PID
        URL="http://127.0.0.1:$BULK_PORT"
    fi
fi
if [ -n "$SLOW_READ_URL" ]; then
    run slow-read -X -c "$CONNECTIONS" -r 100 -k 1 -w 512 -y 1024 -n 5 -z 32 -u "$SLOW_READ_URL" -p 3
else
    echo "== slow-read: skipped (no large response to read: build the bulk example)"
fi

sleep 2
echo "== after the attacks"
server_state
echo "results in $OUT"
