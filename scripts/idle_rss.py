#!/usr/bin/env python3
"""RSS per idle keep-alive connection of a running `weir serve` (docs/BENCHMARKS.md, "Idle
keep-alive connections"): N connections, one GET /healthz each, kept open; the server's
VmRSS before and after, each read once it stops changing. Raise the server's `ulimit -n` first.
usage: idle_rss.py PID PORT N  -> prints rss_before_kib rss_after_kib per_conn_kib"""
import socket, sys, time, resource
pid, port, n = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
resource.setrlimit(resource.RLIMIT_NOFILE, (n + 1000, n + 1000))
def rss():
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
def settle():
    last, same = rss(), 0
    while same < 5:
        time.sleep(0.2); now = rss()
        same = same + 1 if now == last else 0; last = now
    return last
req = b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
def one(s):
    s.sendall(req); got = b""
    while not (b"\r\n\r\n" in got and got.endswith(b"ok") or got.endswith(b"ok\n")):
        d = s.recv(4096)
        if not d: raise SystemExit("closed: %r" % got)
        got += d
# warm-up: a few connections
for _ in range(32):
    s = socket.create_connection(("127.0.0.1", port)); one(s); s.close()
before = settle()
conns = []
for i in range(n):
    s = socket.create_connection(("127.0.0.1", port)); one(s); conns.append(s)
after = settle()
print(before, after, round((after - before) / n, 2))
