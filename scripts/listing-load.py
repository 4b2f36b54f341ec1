#!/usr/bin/env python3
"""Listing load on `weir serve` (issue 19, points 1 and 2): memory held by clients that request a
large listing and never read it, and `/healthz` latency while clients list a large directory in a
loop. Prints figures; asserts nothing (docs/RELIABILITY.md quotes them).

    scripts/listing-load.py --weir target/release/weir [--files 50000] [--stalled 20]
                            [--loopers 4] [--seconds 20] [--follow]

Steps: start `weir serve` on a fresh root, create FILES empty files in `big/` directly on disk,
then
1. open STALLED connections with a 4 KiB receive buffer, send `GET /files/big/` on each and read
   only the status line (so the answer has been computed), then read the server's VmRSS;
   close them and read VmRSS again after 2 s;
2. start LOOPERS threads that list `/files/big/` in a loop (reading the whole answer; with
   `--follow`, walking every page through the `next` cursor), and for SECONDS time sequential
   `GET /healthz` requests, each on a new connection, 10 ms apart: p50, p99 and max.
"""

import argparse
import json
import os
import socket
import subprocess
import tempfile
import threading
import time
import urllib.parse


def rss_kib(pid, field="VmRSS"):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(field)


def read_response(sock):
    """Reads one response (Content-Length framed) and returns (head, body)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            raise RuntimeError("closed before the head")
        data += chunk
    head, body = data.split(b"\r\n\r\n", 1)
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    while len(body) < length:
        chunk = sock.recv(1 << 20)
        if not chunk:
            raise RuntimeError("closed before the end of the body")
        body += chunk
    return head, body


def get(addr, path):
    with socket.create_connection(addr) as s:
        s.sendall(f"GET {path} HTTP/1.1\r\nhost: localhost\r\nconnection: close\r\n\r\n".encode())
        return read_response(s)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--weir", required=True)
    ap.add_argument("--files", type=int, default=50000)
    ap.add_argument("--stalled", type=int, default=20)
    ap.add_argument("--loopers", type=int, default=4)
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--follow", action="store_true")
    args = ap.parse_args()

    tmp = tempfile.mkdtemp(prefix="weir-listing-")
    root = os.path.join(tmp, "root")
    server = subprocess.Popen(
        [args.weir, "serve", "--root", root, "--listen", "127.0.0.1:0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    try:
        line = server.stdout.readline().decode()
        host, port = line.strip().rsplit("http://", 1)[1].rsplit(":", 1)
        addr = (host, int(port))
        big = os.path.join(root, "big")
        os.mkdir(big)
        for i in range(args.files):
            open(os.path.join(big, f"file-{i:06}.dat"), "wb").close()
        get(addr, "/healthz")
        base = rss_kib(server.pid)
        print(f"files {args.files}; RSS at start {base / 1024:.1f} MiB")

        if args.stalled:
            socks = []
            for _ in range(args.stalled):
                s = socket.socket()
                s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
                s.connect(addr)
                s.sendall(b"GET /files/big/ HTTP/1.1\r\nhost: localhost\r\n\r\n")
                socks.append(s)
            for s in socks:
                status = s.recv(12)
                assert status.startswith(b"HTTP/1.1 200"), status
            time.sleep(1)
            held = rss_kib(server.pid)
            print(
                f"{args.stalled} stalled listing clients: RSS {held / 1024:.1f} MiB "
                f"(+{(held - base) / 1024:.1f} MiB)"
            )
            for s in socks:
                s.close()
            time.sleep(2)
            after = rss_kib(server.pid)
            print(f"2 s after they left: RSS {after / 1024:.1f} MiB (+{(after - base) / 1024:.1f} MiB)")

        if args.seconds:
            stop = threading.Event()
            listed = [0]

            def loop():
                while not stop.is_set():
                    path = "/files/big/"
                    while path:
                        _, body = get(addr, path)
                        listed[0] += 1
                        nxt = json.loads(body).get("next") if args.follow else None
                        path = (
                            "/files/big/?after=" + urllib.parse.quote(nxt, safe="")
                            if nxt
                            else None
                        )

            threads = [threading.Thread(target=loop) for _ in range(args.loopers)]
            for t in threads:
                t.start()
            time.sleep(1)
            times = []
            end = time.perf_counter() + args.seconds
            while time.perf_counter() < end:
                start = time.perf_counter()
                head, _ = get(addr, "/healthz")
                times.append(time.perf_counter() - start)
                assert head.startswith(b"HTTP/1.1 200"), head
                time.sleep(0.01)
            stop.set()
            for t in threads:
                t.join()
            times.sort()
            pct = lambda p: times[min(len(times) - 1, int(p * len(times)))] * 1000
            print(
                f"/healthz x{len(times)} in {args.seconds:g} s while {args.loopers} clients list "
                f"({listed[0]} listing requests{', following next' if args.follow else ''}): "
                f"p50 {pct(0.5):.1f} ms, p99 {pct(0.99):.1f} ms, max {times[-1] * 1000:.1f} ms"
            )
    finally:
        server.kill()
        server.wait()
        subprocess.run(["rm", "-rf", tmp])


if __name__ == "__main__":
    main()
