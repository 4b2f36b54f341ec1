"""A 1 GiB upload from headless Chromium (weir's page) against curl, to the same `weir serve`
on loopback, in interleaved rounds. Not a test: docs/BENCHMARKS.md quotes its output.

    WEIR=target/release/weir CHROMIUM=/usr/bin/chromium python3 \\
        crates/weir-cli/tests/browser/bench_upload.py [ROUNDS]

Each round uploads the same file once with curl (`curl -T`, one PUT) and once through the page
(file picker, the IETF resumable-upload protocol in 64 MiB appends), in alternating order, and
prints per round both wall times (the browser's from choosing the file to its row showing
"done"; curl's whole run), their ratio, the server's CPU seconds (user + system,
from /proc) for each, and the CPU seconds of Chromium's processes during its upload.
"""

import os
import re
import subprocess
import sys
import tempfile
import time

from playwright.sync_api import expect, sync_playwright

WEIR = os.environ["WEIR"]
CHROMIUM = os.environ["CHROMIUM"]
ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 3
SIZE = 1 << 30
TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def chromium_cpu_seconds():
    """User + system seconds of every Chromium process now running (the browser, its network
    service and renderers)."""
    total = 0.0
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/comm") as f:
                if "chrom" not in f.read():
                    continue
            total += cpu_seconds(pid)
        except OSError:
            pass
    return total


def main():
    work = tempfile.mkdtemp(prefix="weir-page-bench-")
    src = os.path.join(work, "big.bin")
    with open(src, "wb") as f:
        for _ in range(SIZE // (16 << 20)):
            f.write(os.urandom(16 << 20))
    server = subprocess.Popen(
        [WEIR, "serve", "--root", os.path.join(work, "root"), "--listen", "127.0.0.1:0"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        port = re.search(r":(\d+)$", server.stdout.readline().decode().strip()).group(1)
        url = f"http://127.0.0.1:{port}"
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])

            def by_curl(name):
                t0 = time.monotonic()
                subprocess.run(["curl", "-sS", "-o", "/dev/null", "-T", src, f"{url}/files/{name}"],
                               check=True)
                return time.monotonic() - t0

            def by_browser(name):
                page = browser.new_page()
                page.goto(f"{url}/files/{name}/")
                with page.expect_file_chooser() as chooser:
                    page.click("#pick-files")
                t0, c0 = time.monotonic(), chromium_cpu_seconds()
                chooser.value.set_files([src])
                expect(page.locator(f'#transfers li[data-path="{name}/big.bin"]')).to_have_attribute(
                    "data-state", "done", timeout=600_000)
                elapsed = time.monotonic() - t0
                browser_cpu.append(chromium_cpu_seconds() - c0)
                page.close()
                return elapsed

            browser_cpu = []
            print("round  curl_s  browser_s  browser/curl  server_cpu_curl_s  server_cpu_browser_s"
                  "  chromium_cpu_s")
            for r in range(ROUNDS):
                results = {}
                order = [("curl", by_curl), ("browser", by_browser)]
                if r % 2:
                    order.reverse()
                for kind, run in order:
                    cpu0 = cpu_seconds(server.pid)
                    elapsed = run(f"{kind}{r}")
                    results[kind] = (elapsed, cpu_seconds(server.pid) - cpu0)
                (cw, cc), (bw, bc) = results["curl"], results["browser"]
                print(f"{r:5d}  {cw:6.2f}  {bw:9.2f}  {bw / cw:12.2f}  {cc:17.2f}  {bc:20.2f}"
                      f"  {browser_cpu[-1]:14.2f}", flush=True)
                for kind in ["curl", "browser"]:
                    for sub in [f"{kind}{r}", f"{kind}{r}/big.bin"]:
                        path = os.path.join(work, "root", sub)
                        if os.path.isfile(path):
                            os.remove(path)
            browser.close()
    finally:
        server.kill()
        server.wait()
        subprocess.run(["rm", "-rf", work])


if __name__ == "__main__":
    main()
