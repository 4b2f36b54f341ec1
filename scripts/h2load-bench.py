#!/usr/bin/env python3
"""HTTP/2 small requests (issue 18 item 8): `weir serve` against hyper 1.x, h2c, interleaved.

h2load (nghttp2-client) by prior knowledge against each server in turn, round by round
(forward, then backward), for each shape (connections × streams per connection); prints the
median requests/s of each server and the median (min–max) of the round-by-round ratios to
hyper's. Servers: `weir serve` answering `GET /healthz` (its defaults, no token, no access
log), `weir-bench __serve hyper --h2c` answering `GET /plaintext` (hyper 1.x `http2::Builder`
with hyper-util's executor and weir's default windows), `weir-bench __serve weir` (weir's own
handler, `/plaintext`); each with 2 worker threads (`weir serve`: one per core, 2 here). Wall clock: run it on a quiet machine.

Usage: scripts/h2load-bench.py --bin target/release [--rounds 5] [--duration 5] [--shapes 64x16,64x1]
"""

import argparse
import os
import re
import socket
import statistics
import subprocess
import tempfile
import time


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def wait_listening(port):
    deadline = time.time() + 30
    while time.time() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.1)
    raise SystemExit(f"nothing listening on {port}")


def start(name, bin_dir, work):
    if name == "weir serve":
        port = free_port()
        root = os.path.join(work, "root")
        os.makedirs(root, exist_ok=True)
        proc = subprocess.Popen(
            [os.path.join(bin_dir, "weir"), "serve", "--listen", f"127.0.0.1:{port}",
             "--root", root, "--no-access-log"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            env={k: v for k, v in os.environ.items() if k != "WEIR_TOKEN"},
        )
        wait_listening(port)
        return proc, f"http://127.0.0.1:{port}/healthz"
    system, extra = {"hyper": ("hyper", ["--h2c"]), "weir (bench handler)": ("weir", [])}[name]
    proc = subprocess.Popen(
        [os.path.join(bin_dir, "weir-bench"), "__serve", system, "--threads", "2"] + extra,
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )
    m = re.match(r"ready tcp ([\d.]+):(\d+)", proc.stdout.readline().strip())
    if not m:
        raise SystemExit(f"{name} did not start")
    return proc, f"http://{m.group(1)}:{m.group(2)}/plaintext"


def h2load(url, conns, streams, duration):
    out = subprocess.run(
        ["h2load", "-c", str(conns), "-m", str(streams), "-t", "1",
         f"--warm-up-time=1", "-D", str(duration), url],
        capture_output=True, text=True, check=True,
    ).stdout
    rps = float(re.search(r"finished in [\d.]+\w+, ([\d.]+) req/s", out).group(1))
    failed = int(re.search(r"(\d+) failed", out).group(1))
    errored = int(re.search(r"(\d+) errored", out).group(1))
    if failed or errored:
        raise SystemExit(f"{url}: {failed} failed, {errored} errored\n{out}")
    return rps


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="target/release")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--duration", type=int, default=5)
    ap.add_argument("--shapes", default="64x16,64x1")
    ap.add_argument("--systems", default="weir serve,hyper,weir (bench handler)")
    args = ap.parse_args()
    systems = args.systems.split(",")
    shapes = [tuple(int(x) for x in s.split("x")) for s in args.shapes.split(",")]
    work = tempfile.mkdtemp(prefix="h2load-bench-")
    servers = {name: start(name, args.bin, work) for name in systems}
    try:
        for conns, streams in shapes:
            rps = {name: [] for name in systems}
            for r in range(args.rounds):
                order = systems if r % 2 == 0 else list(reversed(systems))
                for name in order:
                    rps[name].append(h2load(servers[name][1], conns, streams, args.duration))
            print(f"## h2c, {conns} connections x {streams} streams, {args.rounds} rounds "
                  f"of 1 s warm-up + {args.duration} s")
            for name in systems:
                v = rps[name]
                line = f"{name:24} req/s median {statistics.median(v):10.0f} ({min(v):.0f}-{max(v):.0f})"
                if name != "hyper" and "hyper" in rps:
                    ratios = [a / b for a, b in zip(v, rps["hyper"])]
                    line += (f"   ÷ hyper {statistics.median(ratios):.2f} "
                             f"({min(ratios):.2f}-{max(ratios):.2f})")
                print(line, flush=True)
    finally:
        for proc, _ in servers.values():
            proc.kill()
            proc.wait()


if __name__ == "__main__":
    main()
