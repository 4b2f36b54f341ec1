#!/usr/bin/env python3
"""Soak `weir serve`: a bounded mix of uploads, downloads, health checks and aborted
connections, sampling the server's RSS and open file descriptors as it goes.

Passes when, over the whole run: no request failed except the deliberate aborts; every
completed upload reads back intact; no partial upload is left in the root; RSS and open file
descriptors do not keep growing (the second half of the run stays within a margin of the first
half, and the descriptors return to their starting count once the load stops).

    cargo build --release -p weir-cli
    python3 scripts/soak.py --weir target/release/weir --duration 600

Python 3 stdlib only; traffic goes to 127.0.0.1 only; stops by itself.
"""

import argparse
import hashlib
import http.client
import os
import random
import shutil
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time

MiB = 1024 * 1024


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def proc_sample(pid):
    """RSS and high-water mark in KiB, open fds, threads of `pid`."""
    fields = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            fields[key] = value.strip()
    return {
        "rss_kib": int(fields["VmRSS"].split()[0]),
        "hwm_kib": int(fields["VmHWM"].split()[0]),
        "threads": int(fields["Threads"]),
        "fds": len(os.listdir(f"/proc/{pid}/fd")),
    }


class Soak:
    def __init__(self, args, port, root, pid):
        self.args = args
        self.port = port
        self.root = root
        self.pid = pid
        self.deadline = time.monotonic() + args.duration
        self.lock = threading.Lock()
        self.counts = {}
        self.errors = []
        self.samples = []
        self.uploaded = {}  # name -> sha256 of the last completed upload
        self.downloads = "http"
        # One random block; bodies are slices of it at random offsets.
        self.block = os.urandom(2 * args.max_upload)

    def count(self, what, n=1):
        with self.lock:
            self.counts[what] = self.counts.get(what, 0) + n

    def error(self, what):
        with self.lock:
            self.count("errors")
            if len(self.errors) < 30:
                self.errors.append(what)

    def running(self):
        return time.monotonic() < self.deadline

    # ---- operations ----

    def connect(self):
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)

    def request(self, conn, method, path, body=None):
        conn.request(method, path, body=body)
        resp = conn.getresponse()
        data = resp.read()
        return resp.status, data

    def healthz(self, conn):
        status, data = self.request(conn, "GET", "/healthz")
        if status != 200:
            raise RuntimeError(f"GET /healthz: {status} {data[:80]!r}")
        self.count("healthz")

    def body(self, rng):
        size = rng.choice([0, 1, 100, 4096, 65536, 300_000, MiB, 3 * MiB, self.args.max_upload])
        start = rng.randrange(0, len(self.block) - size + 1)
        return memoryview(self.block)[start:start + size]

    def upload(self, conn, rng, worker):
        name = f"soak-{worker}-{rng.randrange(self.args.names)}"
        data = self.body(rng)
        status, reply = self.request(conn, "PUT", f"/files/{name}", body=data)
        if status not in (200, 201, 204):
            raise RuntimeError(f"PUT {name} ({len(data)} B): {status} {reply[:80]!r}")
        with self.lock:
            self.uploaded[name] = hashlib.sha256(data).hexdigest()
        self.count("uploads")
        self.count("upload_bytes", len(data))

    def download(self, conn, rng, worker):
        with self.lock:
            mine = [n for n in self.uploaded if n.startswith(f"soak-{worker}-")]
        if not mine:
            return self.healthz(conn)
        name = rng.choice(mine)
        with self.lock:
            expected = self.uploaded[name]
        data = self.read_back(conn, name)
        if hashlib.sha256(data).hexdigest() != expected:
            raise RuntimeError(f"download of {name}: content differs ({len(data)} B)")
        self.count("downloads")
        self.count("download_bytes", len(data))

    def read_back(self, conn, name):
        if self.downloads == "http":
            status, data = self.request(conn, "GET", f"/files/{name}")
            if status != 200:
                raise RuntimeError(f"GET {name}: {status}")
            return data
        with open(os.path.join(self.root, name), "rb") as f:
            return f.read()

    def abort(self, rng, worker):
        """Starts an upload (or a download) and drops the connection part-way, sometimes with
        a reset. Nothing is expected back; the server must simply survive and clean up."""
        s = socket.create_connection(("127.0.0.1", self.port), timeout=10)
        try:
            if rng.random() < 0.5:
                s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            name = f"soak-abort-{worker}-{rng.randrange(4)}"
            length = 8 * MiB
            head = f"PUT /files/{name} HTTP/1.1\r\nHost: localhost\r\nContent-Length: {length}\r\n\r\n"
            s.sendall(head.encode())
            sent = rng.randrange(0, 2 * MiB)
            s.sendall(memoryview(self.block)[:sent])
            if rng.random() < 0.3:
                time.sleep(rng.random() * 0.2)
        except OSError:
            pass  # the server may already have given up on us: that is fine
        finally:
            s.close()
        self.count("aborts")

    def worker(self, worker):
        rng = random.Random(worker)
        conn = self.connect()
        while self.running():
            op = rng.random()
            try:
                if op < 0.40:
                    self.healthz(conn)
                elif op < 0.65:
                    self.upload(conn, rng, worker)
                elif op < 0.85:
                    self.download(conn, rng, worker)
                else:
                    self.abort(rng, worker)
            except Exception as e:  # noqa: BLE001 - every failure is recorded, none ends the run
                self.error(f"worker {worker}: {type(e).__name__}: {e}")
                conn.close()
                conn = self.connect()
        conn.close()

    def sampler(self):
        start = time.monotonic()
        while self.running():
            sample = proc_sample(self.pid)
            sample["t"] = round(time.monotonic() - start, 1)
            with self.lock:
                sample["requests"] = sum(
                    self.counts.get(k, 0) for k in ("healthz", "uploads", "downloads", "aborts")
                )
                self.samples.append(sample)
            time.sleep(self.args.sample_every)

    def probe_downloads(self):
        """Whether this build serves GET /files/{name}; if not, uploads are read back from
        the root directory instead."""
        conn = self.connect()
        data = b"probe"
        status, _ = self.request(conn, "PUT", "/files/soak-probe", body=data)
        if status not in (200, 201, 204):
            sys.exit(f"soak: PUT /files/soak-probe answered {status}: is this weir serve?")
        status, got = self.request(conn, "GET", "/files/soak-probe")
        conn.close()
        if status == 200 and got == data:
            return "http"
        path = os.path.join(self.root, "soak-probe")
        if os.path.exists(path):
            with open(path, "rb") as f:
                if f.read() == data:
                    return "disk"
        sys.exit("soak: uploads can be read back neither over HTTP nor from the root")


def summarize(samples, key):
    values = [s[key] for s in samples]
    return min(values), int(statistics.median(values)), max(values)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--weir", default="target/release/weir")
    p.add_argument("--duration", type=float, default=600, help="seconds (default 600)")
    p.add_argument("--workers", type=int, default=8)
    p.add_argument("--names", type=int, default=12, help="file names per worker")
    p.add_argument("--max-upload", type=int, default=16 * MiB)
    p.add_argument("--sample-every", type=float, default=5)
    p.add_argument("--rss-margin-mib", type=float, default=32,
                   help="allowed RSS growth of the second half over the first")
    p.add_argument("--samples-csv", help="write every sample to this CSV file")
    args = p.parse_args()

    root = tempfile.mkdtemp(prefix="weir-soak-")
    port = free_port()
    log = open(os.path.join(root, "..", os.path.basename(root) + ".log"), "w")
    server = subprocess.Popen(
        [args.weir, "serve", "--listen", f"127.0.0.1:{port}", "--root", root],
        stdout=log, stderr=subprocess.STDOUT,
    )
    try:
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if server.poll() is not None:
                    sys.exit(f"soak: weir exited with {server.returncode} (log: {log.name})")
                time.sleep(0.05)
        soak = Soak(args, port, root, server.pid)
        soak.downloads = soak.probe_downloads()
        idle_before = proc_sample(server.pid)
        print(f"soak: weir pid {server.pid} on 127.0.0.1:{port}, root {root}, "
              f"downloads via {soak.downloads}, {args.workers} workers, {args.duration:.0f} s")

        threads = [threading.Thread(target=soak.worker, args=(w,)) for w in range(args.workers)]
        threads.append(threading.Thread(target=soak.sampler))
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        time.sleep(3)  # let the server close what the clients left
        idle_after = proc_sample(server.pid)
        alive = server.poll() is None
    finally:
        server.terminate()
        try:
            server.wait(timeout=35)
        except subprocess.TimeoutExpired:
            server.kill()

    failures = []
    if not alive:
        failures.append(f"weir exited during the run (code {server.returncode})")
    if soak.counts.get("errors"):
        failures.append(f"{soak.counts['errors']} requests failed")

    # Every completed upload is intact, and nothing else is left in the root.
    expected = dict(soak.uploaded)
    expected["soak-probe"] = hashlib.sha256(b"probe").hexdigest()
    leftovers, damaged = [], []
    for dirpath, _, files in os.walk(root):
        for f in files:
            path = os.path.join(dirpath, f)
            rel = os.path.relpath(path, root)
            if rel in expected:
                with open(path, "rb") as fh:
                    if hashlib.sha256(fh.read()).hexdigest() != expected.pop(rel):
                        damaged.append(rel)
            elif f != ".weir-lock":  # the store's lock file; anything else (temporary
                leftovers.append(rel)  # `.weir-upload-*.tmp` files included) is a leftover
    if soak.downloads == "disk" and expected:
        failures.append(f"completed uploads missing: {sorted(expected)[:5]}")
    if damaged:
        failures.append(f"completed uploads damaged: {damaged[:5]}")
    # Aborted uploads never send their whole body, so none of them may ever appear.
    if leftovers:
        failures.append(f"unexpected (partial?) files in the root: {leftovers[:5]}")

    # Nothing grows without bound: compare the halves after a warm-up fifth.
    samples = soak.samples
    steady = samples[len(samples) // 5:]
    if len(steady) >= 4:
        half = len(steady) // 2
        first, second = steady[:half], steady[half:]
        rss1 = max(s["rss_kib"] for s in first)
        rss2 = max(s["rss_kib"] for s in second)
        if rss2 > rss1 * 1.25 + args.rss_margin_mib * 1024:
            failures.append(f"RSS grew: {rss1} KiB max in the first half, {rss2} in the second")
        fd1 = max(s["fds"] for s in first)
        fd2 = max(s["fds"] for s in second)
        if fd2 > fd1 + 16:
            failures.append(f"open fds grew: {fd1} max in the first half, {fd2} in the second")
    else:
        failures.append(f"only {len(samples)} samples: run longer")
    if idle_after["fds"] > idle_before["fds"] + 4:
        failures.append(f"fds not released: {idle_before['fds']} idle before, "
                        f"{idle_after['fds']} idle after")

    if args.samples_csv:
        with open(args.samples_csv, "w") as f:
            f.write("t,rss_kib,hwm_kib,fds,threads,requests\n")
            for x in samples:
                f.write(f"{x['t']},{x['rss_kib']},{x['hwm_kib']},{x['fds']},{x['threads']},"
                        f"{x['requests']}\n")
    c = soak.counts
    print(f"requests: {c.get('healthz', 0)} healthz, {c.get('uploads', 0)} uploads "
          f"({c.get('upload_bytes', 0) / MiB:.0f} MiB), {c.get('downloads', 0)} downloads "
          f"({c.get('download_bytes', 0) / MiB:.0f} MiB), {c.get('aborts', 0)} aborted; "
          f"{c.get('errors', 0)} errors")
    if samples:
        for key, unit in (("rss_kib", "KiB"), ("fds", "fds"), ("threads", "threads")):
            lo, med, hi = summarize(samples, key)
            print(f"{key:8} min {lo} median {med} max {hi} {unit} over {len(samples)} samples")
        print("samples (t s: rss KiB, fds, requests):")
        step = max(1, len(samples) // 12)
        for s in samples[::step] + ([samples[-1]] if (len(samples) - 1) % step else []):
            print(f"  {s['t']:7.1f}: {s['rss_kib']:7} {s['fds']:4} {s['requests']:7}")
        print(f"peak RSS (VmHWM) {samples[-1]['hwm_kib']} KiB")
    print(f"idle before: {idle_before['fds']} fds, {idle_before['rss_kib']} KiB; "
          f"idle after: {idle_after['fds']} fds, {idle_after['rss_kib']} KiB")
    print(f"files left by aborted uploads: {len(leftovers)}")
    for e in soak.errors:
        print(f"error: {e}")
    if failures:
        for f in failures:
            print(f"FAIL: {f}")
        print(f"(root kept for inspection: {root})")
        sys.exit(1)
    shutil.rmtree(root, ignore_errors=True)
    print("soak: PASS")


if __name__ == "__main__":
    main()
