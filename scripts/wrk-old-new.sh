#!/bin/bash
# weir serve /healthz, an old binary against a new one (issue 18: "no other row got worse"):
# wrk -t1 -c64, depth 1 and 16 (pipelined with pipeline.lua), 2 s warm-up then 8 s measured,
# binaries alternating round by round; server CPU (utime + stime) from /proc/PID/stat.
# usage: [PIN=1] scripts/wrk-old-new.sh OLD_WEIR NEW_WEIR [ROUNDS]
# PIN=1: servers on CPU 0 (so one worker thread), wrk on CPU 1. On two shared cores the
# unpinned run flips between scheduling modes whose CPU per request differ by 2x; pinned, the
# old/new ratio is stable.
# The new binary gets --no-access-log (binaries before the access log existed have no such flag).
# Prints: round depth binary requests/s server-CPU-ticks(10 ms) server-CPU-µs/request
set -e
OLD=$1; NEW=$2; R=${3:-3}
W=$(mktemp -d)
cat > $W/pipeline.lua <<'L'
init = function(args)
  local r = {}
  for i = 1, tonumber(os.getenv("DEPTH")) do r[i] = wrk.format(nil, "/healthz") end
  req = table.concat(r)
end
request = function() return req end
L
if [ "$PIN" = 1 ]; then SP="taskset -c 0"; CP="taskset -c 1"; else SP=""; CP=""; fi
start() { rm -rf $W/root-$2; mkdir -p $W/root-$2; env -u WEIR_TOKEN $SP $1 serve --listen 127.0.0.1:$3 --root $W/root-$2 $4 >/dev/null 2>&1 & echo $!; }
PO=$(start $OLD old 18091 ""); PN=$(start $NEW new 18092 --no-access-log); sleep 1
trap "kill $PO $PN; rm -rf $W" EXIT
cpu() { awk '{print $14+$15}' /proc/$1/stat; }
for r in $(seq 1 $R); do for d in 1 16; do
  if [ $((r % 2)) = 1 ]; then order="old new"; else order="new old"; fi
  for b in $order; do
    if [ $b = old ]; then P=$PO; port=18091; else P=$PN; port=18092; fi
    DEPTH=$d $CP wrk -t1 -c64 -d2s -s $W/pipeline.lua http://127.0.0.1:$port/healthz >/dev/null
    c0=$(cpu $P)
    out=$(DEPTH=$d $CP wrk -t1 -c64 -d8s -s $W/pipeline.lua http://127.0.0.1:$port/healthz)
    c1=$(cpu $P)
    rps=$(echo "$out" | awk '/Requests\/sec/ {print $2}')
    echo "$r $d $b $rps $((c1-c0)) $(echo "scale=3; ($c1-$c0)*10000/($rps*8)" | bc)"
  done
done; done
