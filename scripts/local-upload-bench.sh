#!/bin/bash
# Local upload of a 1 GiB file: weir put passing the file (SCM_RIGHTS) vs streaming it over the
# same Unix socket vs cp + fsync; interleaved rounds; wall time and server CPU (utime+stime).
# usage: [WEIR=target/release/weir] [SERVE_ARGS=--no-hash] scripts/local-upload-bench.sh DIR ROUNDS
# (DIR on the filesystem under test). Prints: round mode seconds server-CPU-ticks (10 ms)
# client-CPU-seconds (user+sys of the command: `weir put`, or cp + sync).
# Modes: pass (weir put, file passed), stream (--no-pass-file), pass_nd / stream_nd (the same
# with --no-digest: no client hash), cp (cp + sync of the file).
set -e
W=${WEIR:-target/release/weir}; W=$(realpath $W)
D=$1; R=${2:-3}
mkdir -p $D; cd $D
[ -f src.bin ] || head -c $((1<<30)) /dev/urandom > src.bin
sync
rm -rf data s.sock
$W serve --unix $D/s.sock --listen 127.0.0.1:0 --root $D/data --no-access-log $SERVE_ARGS >/dev/null 2>&1 &
PID=$!
trap "kill $PID" EXIT
sleep 1
cpu() { awk '{print $14+$15}' /proc/$PID/stat; }
now() { date +%s.%N; }
for r in $(seq 1 $R); do
  for mode in pass stream pass_nd stream_nd cp; do
    rm -f data/x.bin cp.bin; sync
    # The source page-cached before every mode (other processes' memory may have evicted it).
    cat src.bin > /dev/null
    c0=$(cpu); t0=$(now)
    TIMEFORMAT='%U %S'
    { time {
    case $mode in
      pass) $W put --unix $D/s.sock src.bin http://weir/files/x.bin 2>/dev/null ;;
      stream) $W put --no-pass-file --unix $D/s.sock src.bin http://weir/files/x.bin 2>/dev/null ;;
      pass_nd) $W put --no-digest --unix $D/s.sock src.bin http://weir/files/x.bin 2>/dev/null ;;
      stream_nd) $W put --no-digest --no-pass-file --unix $D/s.sock src.bin http://weir/files/x.bin 2>/dev/null ;;
      cp) cp src.bin cp.bin && sync cp.bin ;;
    esac
    } ; } 2> $D/client.time
    t1=$(now); c1=$(cpu)
    echo "$r $mode $(echo "$t1 - $t0" | bc) $(( c1 - c0 )) $(awk '{print $1+$2}' $D/client.time)"
  done
done
