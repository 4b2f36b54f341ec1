#!/usr/bin/env bash
# External check of "zero heap allocations per request": runs the release `weir serve` under
# valgrind's DHAT twice, with 1,000 and with 2,000 keep-alive `GET /healthz` requests on one
# connection, and prints the difference of the total allocation counts divided by 1,000.
# weir serve uses the system allocator, so DHAT sees every allocation.
#
# Usage: scripts/dhat-allocs.sh            (needs valgrind and python3)
set -euo pipefail
cd "$(dirname "$0")/.."
command -v valgrind >/dev/null || { echo "valgrind is not installed" >&2; exit 1; }
cargo build --release -p weir-cli >/dev/null 2>&1
bin=target/release/weir
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
port=18181

client() {
    python3 - "$port" "$1" <<'PY'
import http.client, sys, time
port, n = int(sys.argv[1]), int(sys.argv[2])
for _ in range(300):
    try:
        c = http.client.HTTPConnection("127.0.0.1", port); c.connect(); break
    except OSError:
        time.sleep(0.1)
for _ in range(n):
    c.request("GET", "/healthz"); r = c.getresponse(); r.read()
    assert r.status == 200, r.status
PY
}

blocks() {
    local n=$1
    valgrind --tool=dhat --dhat-out-file="$work/dhat-$n.json" "$bin" serve \
        --listen "127.0.0.1:$port" --root "$work/root-$n" >"$work/log-$n" 2>&1 &
    local pid=$!
    # A count from a server that died early would look like "0 per request": every request
    # must be answered, and the server must still be there to be stopped.
    if ! client "$n"; then
        echo "the client failed after starting $n requests; server log:" >&2
        tail -40 "$work/log-$n" >&2
        exit 1
    fi
    if ! kill -INT "$pid"; then
        echo "weir serve exited before it was stopped; server log:" >&2
        tail -40 "$work/log-$n" >&2
        exit 1
    fi
    wait "$pid" || true
    grep -E "Total:" "$work/log-$n" | sed -E 's/.* in ([0-9,]+) blocks.*/\1/' | tr -d ,
}

a=$(blocks 1000)
b=$(blocks 2000)
echo "total allocations: $a after 1,000 requests, $b after 2,000 requests"
echo "allocations per request (steady state): $(( (b - a) / 1000 )) ($(( b - a )) over 1,000 requests)"
