#!/usr/bin/env python3
"""Instructions per request of one server, counted by valgrind's callgrind.

A deterministic cost metric for a machine whose wall clock is shared with other tenants: the
server runs under `valgrind --tool=callgrind`; after a warm-up the counters are zeroed
(`callgrind_control -z`), N requests are made, the counters are dumped (`callgrind_control -d`),
and the dump's total instruction count (Ir) is divided by N. The dump keeps the split by
function for `callgrind_annotate`.

Servers: `weir-bench __serve SYSTEM` (weir, weir-axum, hyper, hyper-axum, raw-responder,
actix-web) or `weir serve` (system `weir-serve`, path /healthz). Clients:
  h1: this script, C keep-alive connections, each sending DEPTH requests at a time and reading
      all their responses (wrk's pipelining), round robin over the connections;
  h2: h2load (nghttp2-client) with -c C -m DEPTH, h2c by prior knowledge.

Usage:
  scripts/callgrind-per-request.py --bin target/release --system weir --proto h1 \
      --conns 8 --depth 1 --requests 20000 [--threads 2] [--out DIR] [--annotate]
Prints one line: `SYSTEM PROTO c=C d=DEPTH Ir/req=X syscalls...`.
"""

import argparse
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time

REQUEST = b"GET /plaintext HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
HEALTHZ = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"


def start_server(args, out_file, work):
    vg = [
        "valgrind",
        "--tool=callgrind",
        f"--callgrind-out-file={out_file}",
        "--vgdb=yes",
        "--dump-instr=no",
    ]
    if args.system == "weir-serve":
        port = args.port
        root = os.path.join(work, "root")
        os.makedirs(root, exist_ok=True)
        cmd = vg + [
            os.path.join(args.bin, "weir"),
            "serve",
            "--listen",
            f"127.0.0.1:{port}",
            "--root",
            root,
        ] + (["--threads", str(args.threads)] if args.threads_flag else [])
        proc = subprocess.Popen(
            cmd, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
            stderr=open(os.path.join(work, "server.log"), "w"),
        )
        deadline = time.time() + 120
        while time.time() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                return proc, ("127.0.0.1", port)
            except OSError:
                time.sleep(0.2)
        raise SystemExit("weir serve did not start")
    cmd = vg + [
        os.path.join(args.bin, "weir-bench"),
        "__serve",
        args.system,
        "--threads",
        str(args.threads),
    ]
    if args.proto == "h2" and args.system.startswith("hyper"):
        cmd.append("--h2c")
    proc = subprocess.Popen(
        cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=open(os.path.join(work, "server.log"), "w"), text=True,
    )
    line = proc.stdout.readline().strip()
    m = re.match(r"ready tcp ([\d.]+):(\d+)", line)
    if not m:
        raise SystemExit(f"server did not start: {line!r}")
    return proc, (m.group(1), int(m.group(2)))


def h1_requests(addr, conns, depth, total, request):
    socks = [socket.create_connection(addr) for _ in range(conns)]
    for s in socks:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    batch = request * depth
    done = 0
    bufs = [b""] * conns
    while done < total:
        for s in socks:
            s.sendall(batch)
        for i, s in enumerate(socks):
            got = 0
            buf = bufs[i]
            while got < depth:
                end = buf.find(b"\r\n\r\n")
                if end < 0:
                    buf += s.recv(65536)
                    continue
                head = buf[:end]
                m = re.search(rb"(?i)content-length: *(\d+)", head)
                body = int(m.group(1)) if m else 0
                while len(buf) < end + 4 + body:
                    buf += s.recv(65536)
                assert head.startswith(b"HTTP/1.1 200"), head
                buf = buf[end + 4 + body:]
                got += 1
            bufs[i] = buf
        done += conns * depth
    for s in socks:
        s.close()
    return done


def h2_requests(addr, conns, depth, total, path):
    url = f"http://{addr[0]}:{addr[1]}{path}"
    out = subprocess.run(
        ["h2load", "-n", str(total), "-c", str(conns), "-m", str(depth), url],
        capture_output=True, text=True, check=True,
    ).stdout
    m = re.search(r"requests: \d+ total, \d+ started, (\d+) done, (\d+) succeeded", out)
    if not m or m.group(1) != m.group(2) or int(m.group(1)) != total:
        raise SystemExit(f"h2load failed:\n{out}")
    return total


def control(pid, flag):
    subprocess.run(["callgrind_control", flag, str(pid)], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def total_ir(path):
    with open(path) as f:
        for line in f:
            if line.startswith("summary:") or line.startswith("totals:"):
                return int(line.split()[1])
    raise SystemExit(f"no totals in {path}")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bin", default="target/release")
    p.add_argument("--system", required=True)
    p.add_argument("--proto", choices=["h1", "h2"], default="h1")
    p.add_argument("--conns", type=int, default=8)
    p.add_argument("--depth", type=int, default=1)
    p.add_argument("--requests", type=int, default=20000)
    p.add_argument("--warmup", type=int, default=2000)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--threads-flag", action="store_true",
                   help="weir serve: pass --threads")
    p.add_argument("--port", type=int, default=18191)
    p.add_argument("--out", default=None, help="keep the dump here")
    p.add_argument("--annotate", action="store_true")
    args = p.parse_args()

    work = tempfile.mkdtemp(prefix="cg-")
    out_file = os.path.join(work, "callgrind.out.%p")
    proc, addr = start_server(args, out_file, work)
    path = "/healthz" if args.system == "weir-serve" else "/plaintext"
    req = HEALTHZ if args.system == "weir-serve" else REQUEST
    run = (lambda n: h1_requests(addr, args.conns, args.depth, n, req)) if args.proto == "h1" \
        else (lambda n: h2_requests(addr, args.conns, args.depth, n, path))
    try:
        run(args.warmup)
        time.sleep(0.5)
        control(proc.pid, "-z")
        n = run(args.requests)
        control(proc.pid, "-d")
    finally:
        if proc.stdin:
            try:
                proc.stdin.write("quit\n" if args.system != "weir-serve" else "")
                proc.stdin.close()
            except (BrokenPipeError, TypeError):
                pass
        if args.system == "weir-serve":
            proc.send_signal(2)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
    dumps = sorted(f for f in os.listdir(work) if f.startswith("callgrind.out.") and
                   re.search(r"\.\d+\.\d+$", f))
    if not dumps:
        dumps = sorted(f for f in os.listdir(work) if f.startswith("callgrind.out."))
    dump = os.path.join(work, dumps[0])
    ir = total_ir(dump)
    print(f"{args.system} {args.proto} c={args.conns} d={args.depth} threads={args.threads} "
          f"requests={n} Ir/req={ir / n:.0f}")
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        dst = os.path.join(args.out, f"{args.system}-{args.proto}-c{args.conns}-d{args.depth}"
                           f"-t{args.threads}.cg")
        shutil.copy(dump, dst)
        print(f"dump: {dst}")
    if args.annotate:
        a = subprocess.run(["callgrind_annotate", "--inclusive=no", dump],
                           capture_output=True, text=True).stdout
        print("\n".join(a.splitlines()[:60]))
    if not args.out:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
