"""A 1 GiB upload from headless Chromium (weir's page) against curl, to the same `weir serve`
on loopback, in interleaved rounds; or many small files through two versions of the page.
Not a test: docs/BENCHMARKS.md quotes its output.

    WEIR=target/release/weir CHROMIUM=/usr/bin/chromium python3 \\
        crates/weir-cli/tests/browser/bench_upload.py [ROUNDS]

    WEIR=... CHROMIUM=... OLD_ASSETS=DIR python3 \\
        crates/weir-cli/tests/browser/bench_upload.py small [FILES] [ROUNDS]

`small`: FILES (default 2000) files of 500 B to 8 KiB picked at once ("Choose files") into a
new folder, through the page the binary serves ("new") and through an older page ("old": the
index.html, weir.js and weir.css in OLD_ASSETS, served in their place to the same browser and
server), in alternating order, each round into new folders. Prints per run the seconds from
choosing the files to every row showing "done", files per second, the listing fetches the
page made meanwhile, the most uploads in flight at once, and the CPU seconds of the server and
of Chromium. PAGES=new (or old) runs only that page.

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
ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1] != "small" else 3
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


def small_files(count, rounds):
    import random
    work = tempfile.mkdtemp(prefix="weir-page-bench-small-")
    src = os.path.join(work, "src")
    os.makedirs(src)
    rng = random.Random(35)
    files = []
    for i in range(count):
        path = os.path.join(src, f"sample-{i:05d}.csv")
        with open(path, "wb") as f:
            f.write(os.urandom(rng.randint(500, 8192)))
        files.append(path)
    old_dir = os.environ["OLD_ASSETS"]
    types = {"weir.js": "text/javascript", "weir.css": "text/css", "index.html": "text/html"}
    old_bytes = {}
    for name in types:
        with open(os.path.join(old_dir, name), "rb") as f:
            old_bytes[name] = f.read()
    server = subprocess.Popen(
        [WEIR, "serve", "--root", os.path.join(work, "root"), "--listen", "127.0.0.1:0"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        port = re.search(r":(\d+)$", server.stdout.readline().decode().strip()).group(1)
        url = f"http://127.0.0.1:{port}"
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])

            def run(kind, folder):
                context = browser.new_context()
                page = context.new_page()
                if kind == "old":
                    def old(route, name):
                        route.fulfill(status=200, body=old_bytes[name],
                                      headers={"content-type": types[name] + "; charset=utf-8"})
                    page.route("**/assets/weir.js", lambda r: old(r, "weir.js"))
                    page.route("**/assets/weir.css", lambda r: old(r, "weir.css"))
                    page.route(re.compile(r"^http://[^/]+/files/[^?]*/$"), lambda r: old(r, "index.html")
                               if r.request.resource_type == "document" else r.continue_())
                page.goto(f"{url}/files/{folder}/")
                page.wait_for_selector("#status:not(:empty)")
                seen = {"listings": 0, "in_flight": 0, "most": 0}

                def uploading(r):
                    return r.method in ("PUT", "PATCH", "POST") and ("/files/" + folder in r.url or "/uploads/" in r.url)

                def on_request(r):
                    if r.method == "GET" and "limit=" in r.url:
                        seen["listings"] += 1
                    if uploading(r):
                        seen["in_flight"] += 1
                        seen["most"] = max(seen["most"], seen["in_flight"])

                def on_end(r):
                    if uploading(r):
                        seen["in_flight"] -= 1

                page.on("request", on_request)
                page.on("response", lambda r: on_end(r.request))
                page.on("requestfailed", on_end)
                with page.expect_file_chooser() as chooser:
                    page.click("#pick-files")
                t0, c0, s0 = time.monotonic(), chromium_cpu_seconds(), cpu_seconds(server.pid)
                chooser.value.set_files(files)
                expect(page.locator("#transfers li[data-state=done]")).to_have_count(count, timeout=3_600_000)
                elapsed = time.monotonic() - t0
                chromium_cpu, server_cpu = chromium_cpu_seconds() - c0, cpu_seconds(server.pid) - s0
                stored = len(os.listdir(os.path.join(work, "root", folder)))
                assert stored == count, (kind, stored)
                context.close()
                return elapsed, seen, server_cpu, chromium_cpu

            print("round  page  files  seconds  files/s  listing_fetches  most_in_flight  server_cpu_s  chromium_cpu_s")
            for r in range(rounds):
                order = ["old", "new"] if r % 2 == 0 else ["new", "old"]
                order = [k for k in order if k in os.environ.get("PAGES", "old,new").split(",")]
                for kind in order:
                    elapsed, seen, server_cpu, chromium_cpu = run(kind, f"{kind}{r}")
                    print(f"{r:5d}  {kind:4s}  {count:5d}  {elapsed:7.1f}  {count / elapsed:7.1f}"
                          f"  {seen['listings']:15d}  {seen['most']:14d}  {server_cpu:12.1f}  {chromium_cpu:14.1f}",
                          flush=True)
            browser.close()
    finally:
        server.kill()
        server.wait()
        subprocess.run(["rm", "-rf", work])


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "small":
        small_files(int(sys.argv[2]) if len(sys.argv) > 2 else 2000,
                    int(sys.argv[3]) if len(sys.argv) > 3 else 1)
    else:
        main()
