#!/usr/bin/env python3
"""RSS of `weir serve` while N uploads trickle just above its minimum body rate (240 B/s).

Usage: scripts/trickle_rss.py WEIR_BINARY N SECONDS [WARM [BURST [STAGGER]]]

Starts the binary on a fresh root, opens N `PUT`s (Content-Length 100 MB) that send 300 bytes
a second each (after BURST bytes at once, if given; one every STAGGER seconds, if given; after
WARM concurrent 4 MiB uploads, if given), waits SECONDS, then reports the server's VmRSS growth
(the peak of five samples a second apart) in total and per upload. Raise `ulimit -n` first for
large N (the server needs two descriptors per upload).
"""
import asyncio, os, subprocess, sys, time, tempfile

BIN, N, SECONDS = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
WARM = int(sys.argv[4]) if len(sys.argv) > 4 else 0
BURST = int(sys.argv[5]) if len(sys.argv) > 5 else 0   # bytes sent at once before trickling
STAGGER = float(sys.argv[6]) if len(sys.argv) > 6 else 0  # seconds between upload starts
RATE_CHUNK = 300   # bytes per second per upload, above the 240 B/s minimum

def rss_kib(pid):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])

async def upload(i, port, stop):
    r, w = await asyncio.open_connection("127.0.0.1", port)
    w.write(f"PUT /files/t/{i} HTTP/1.1\r\nhost: localhost\r\ncontent-length: 100000000\r\n\r\n".encode())
    if BURST:
        w.write(b"z" * BURST)
        await w.drain()
    while not stop.is_set():
        w.write(b"x" * RATE_CHUNK)
        await w.drain()
        try:
            await asyncio.wait_for(stop.wait(), 1.0)
        except asyncio.TimeoutError:
            pass
    w.close()

async def main():
    root = tempfile.mkdtemp(dir="/tmp/small-rss")
    p = subprocess.Popen([BIN, "serve", "--root", root, "--listen", "127.0.0.1:0"],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    line = p.stdout.readline()
    port = int(line.strip().rsplit(":", 1)[1].rstrip("/"))
    await asyncio.sleep(0.5)
    if WARM:
        # A server that has served traffic: concurrent fast uploads first (their buffers are
        # touched, then freed or kept idle by the pool).
        async def fast(i):
            r, w = await asyncio.open_connection("127.0.0.1", port)
            size = 4 << 20
            w.write(f"PUT /files/warm/{i} HTTP/1.1\r\nhost: localhost\r\ncontent-length: {size}\r\nconnection: close\r\n\r\n".encode())
            w.write(b"y" * size)
            await w.drain()
            await r.read()
            w.close()
        await asyncio.gather(*(fast(i) for i in range(WARM)))
        await asyncio.sleep(0.5)
    base = rss_kib(p.pid)
    stop = asyncio.Event()
    tasks = []
    for i in range(N):
        tasks.append(asyncio.create_task(upload(i, port, stop)))
        if STAGGER:
            await asyncio.sleep(STAGGER)
        elif i % 100 == 99:
            await asyncio.sleep(0.05)
    await asyncio.sleep(SECONDS)
    samples = []
    for _ in range(5):
        samples.append(rss_kib(p.pid))
        await asyncio.sleep(1)
    stop.set()
    await asyncio.gather(*tasks, return_exceptions=True)
    p.kill(); p.wait()
    peak = max(samples)
    print(f"{os.path.basename(BIN)} N={N} warm={WARM} burst={BURST} stagger={STAGGER}: RSS before {base} KiB, with uploads {peak} KiB, "
          f"growth {(peak-base)/1024:.1f} MiB = {(peak-base)/N:.1f} KiB per upload")
    subprocess.run(["rm", "-rf", root])

asyncio.run(main())
