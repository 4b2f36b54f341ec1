"""weir's browser page in headless Chromium (Playwright for Python), against `weir serve`;
and what pages of other origins (and a DNS-rebound name) cannot do to it.

Run by tests/browser/main.rs with: WEIR (the binary), WORK (an empty directory), CHROMIUM
(the browser's executable); WEIR_PAGE_SCREENSHOT (optional) is where to save a screenshot of
the page after the uploads.

The script runs the server itself (it must kill it at a moment only the browser's traffic
shows, and start it again on the same port and root): SIGKILL while the large file's second
append is on its way, then a new `weir serve`; the page must resume from the offset the
server kept and finish. Exits non-zero (an AssertionError) on any failure.
"""

import http.server
import threading
import hashlib
import os
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request

from playwright.sync_api import expect, sync_playwright

WEIR = os.environ["WEIR"]
WORK = os.environ["WORK"]
CHROMIUM = os.environ["CHROMIUM"]
SCREENSHOT = os.environ.get("WEIR_PAGE_SCREENSHOT")
ROOT = os.path.join(WORK, "root")
CHUNK = 64 * 1024 * 1024  # the page's append size (weir.js: CHUNK)
BIG = 200 * 1024 * 1024
TIMEOUT_MS = 120_000


class Server:
    """`weir serve` on ROOT; `port` is kept across restarts."""

    running = []  # every process started, so that a failing run leaves none behind

    def __init__(self, *args):
        self.args = list(args)
        self.port = 0
        self.proc = None

    def start(self):
        log = open(os.path.join(WORK, "server-stderr.log"), "ab")
        self.proc = subprocess.Popen(
            [WEIR, "serve", "--root", ROOT, "--listen", f"127.0.0.1:{self.port}", *self.args],
            stdout=subprocess.PIPE, stderr=log, stdin=subprocess.DEVNULL,
            env={k: v for k, v in os.environ.items() if k != "WEIR_TOKEN"},
        )
        Server.running.append(self.proc)
        line = self.proc.stdout.readline().decode()
        m = re.search(r" on http://127\.0\.0\.1:(\d+)", line)
        assert m, f"weir serve did not start: {line!r}"
        self.port = int(m.group(1))
        return self

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}"

    def kill(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=30)


class AppPage(http.server.BaseHTTPRequestHandler):
    """A blank page of another origin, on loopback like weir (so that Chromium's local network
    checks do not apply): http://localhost:PORT is let in by --cors-origin, the same page as
    http://127.0.0.1:PORT is another origin."""

    def do_GET(self):
        body = b"<!doctype html><title>app</title>"
        self.send_response(200)
        self.send_header("content-type", "text/html")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def write(path, data):
    with open(path, "wb") as f:
        f.write(data)
    return path


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def same_file(a, b):
    assert os.path.getsize(a) == os.path.getsize(b), (a, b)
    assert sha256_file(a) == sha256_file(b), (a, b)


def cross_site_writes(page, origin, base):
    """From a page of `origin`, writes to weir at `base` that need no preflight: a `no-cors`
    `fetch` of a form, `sendBeacon` of a form and of text, and a form submitted by the page;
    waits until weir has answered all four (its access log), and checks each was refused."""
    log = os.path.join(WORK, "server-stderr.log")
    seen = open(log, "rb").read().count(b"method=POST path=/files/")
    page.goto(origin + "/app.html")
    queued = page.evaluate("""async (base) => {
        const form = (name) => { const f = new FormData(); f.append("f", new Blob([name]), name); return f; };
        await fetch(base + "/files/", { method: "POST", mode: "no-cors", body: form("no-cors.txt") });
        return [navigator.sendBeacon(base + "/files/", form("beacon.txt")),
                navigator.sendBeacon(base + "/files/text/", "beacon text")];
    }""", base)
    assert queued == [True, True], queued
    page.set_content(f"""<form method=post enctype=multipart/form-data action="{base}/files/">
        <input type=file name=f></form>""")
    page.set_input_files("input", [{"name": "submitted.txt", "mimeType": "text/plain", "buffer": b"form"}])
    with page.expect_navigation():
        page.evaluate("document.forms[0].submit()")
    deadline = time.time() + 30
    while True:
        lines = [l for l in open(log, "rb").read().splitlines() if b"method=POST path=/files/" in l][seen:]
        if len(lines) >= 4 or time.time() > deadline:
            break
        time.sleep(0.1)
    assert len(lines) == 4 and all(b" status=403" in l for l in lines), lines


def row(page, path):
    quoted = path.replace("\\", "\\\\").replace('"', '\\"')
    return page.locator(f'#transfers li[data-path="{quoted}"]')


def wait_done(page, path):
    expect(row(page, path)).to_have_attribute("data-state", "done", timeout=TIMEOUT_MS)
    return row(page, path).locator("[data-sha256]").get_attribute("data-sha256")


def listed_link(page, name):
    return page.locator("#listing td.name a").filter(has_text=re.compile("^" + re.escape(name) + "$"))


def main():
    os.makedirs(ROOT)
    src = os.path.join(WORK, "src")
    os.makedirs(src)
    small = write(os.path.join(src, "small.txt"), os.urandom(100 * 1024))
    big = os.path.join(src, "big.bin")
    with open(big, "wb") as f:
        for _ in range(BIG // (8 << 20)):
            f.write(os.urandom(8 << 20))
    xss_names = ['<img src=x onerror=alert(1)>.txt', '"quoted\' <script>alert(2)<.txt']
    xss = [write(os.path.join(src, n), n.encode()) for n in xss_names]
    # U+202E RIGHT-TO-LEFT OVERRIDE: weir refuses such names (weir_store::validate_name).
    rtl_name = "invoice\u202etxt.exe"
    rtl = write(os.path.join(src, rtl_name), b"MZ")
    dropped_data = bytes(range(256)) * 1200  # 300 KiB, made again in the page

    app = http.server.ThreadingHTTPServer(("127.0.0.1", 0), AppPage)
    threading.Thread(target=app.serve_forever, daemon=True).start()
    app_origin = f"http://localhost:{app.server_address[1]}"
    other_origin = f"http://127.0.0.1:{app.server_address[1]}"

    server = Server().start()
    with sync_playwright() as p:
        # attacker.example resolves to 127.0.0.1, as a DNS-rebinding page's name would.
        browser = p.chromium.launch(executable_path=CHROMIUM, args=[
            "--no-sandbox", "--host-resolver-rules=MAP attacker.example 127.0.0.1"])
        context = browser.new_context(accept_downloads=True, viewport={"width": 1000, "height": 900})
        page = context.new_page()
        dialogs = []

        def on_dialog(d):
            dialogs.append((d.type, d.message))
            d.accept()

        page.on("dialog", on_dialog)
        errors = []
        page.on("pageerror", lambda e: errors.append(str(e)))

        # The page, with its policy.
        response = page.goto(server.url + "/")
        csp = response.headers["content-security-policy"]
        assert "script-src 'self'" in csp and "unsafe-inline" not in csp, csp
        assert response.headers["x-content-type-options"] == "nosniff"

        # Kill the server when the large file's second append starts (the first 64 MiB are
        # stored), note the offset the page learns for that upload after the restart (the
        # other files' uploads are asked too, and may be asked first: their offsets are not it).
        state = {"killed": False, "resumed_at": None, "upload": None}

        def on_request(req):
            if (req.method == "PATCH" and not state["killed"]
                    and req.headers.get("upload-offset", "0") != "0"):
                state["killed"] = True
                state["upload"] = req.url
                server.kill()

        def on_response(resp):
            if (resp.request.method == "HEAD" and state["killed"]
                    and resp.url == state["upload"]):
                offset = resp.headers.get("upload-offset")
                if offset and state["resumed_at"] is None:
                    state["resumed_at"] = int(offset)

        page.on("request", on_request)
        page.on("response", on_response)

        # Keyboard: focus "Choose files", Enter opens the picker.
        with page.expect_file_chooser() as chooser:
            page.locator("#pick-files").press("Enter")
        chooser.value.set_files([small, big, *xss, rtl])

        deadline = time.time() + 60
        while not state["killed"]:
            assert time.time() < deadline, "the large upload never reached its second append"
            page.wait_for_timeout(50)
        page.wait_for_timeout(1000)
        server.start()  # same port, same root
        sums = {"small.txt": wait_done(page, "small.txt"), "big.bin": wait_done(page, "big.bin")}
        assert state["resumed_at"] is not None and CHUNK <= state["resumed_at"] < BIG, state
        for name, path in [("small.txt", small), ("big.bin", big)]:
            assert sums[name] == sha256_file(path), name
            same_file(path, os.path.join(ROOT, name))

        # Names are text: shown as given, no element made of them, no script run.
        for name, path in zip(xss_names, xss):
            wait_done(page, name)
            same_file(path, os.path.join(ROOT, name))
            expect(listed_link(page, name)).to_have_count(1)
            expect(row(page, name).locator(".name")).to_have_text(name)
        assert page.locator("img").count() == 0
        assert not [d for d in dialogs if d[0] == "alert"], dialogs
        # The right-to-left override is refused, and said so.
        rtl_row = row(page, rtl_name)
        expect(rtl_row).to_have_attribute("data-state", "failed", timeout=TIMEOUT_MS)
        expect(rtl_row.locator(".detail")).to_contain_text("invisible")
        # ... and its name shown with the override spelled out, not obeyed.
        expect(rtl_row.locator(".name")).to_have_text("invoice<U+202E>txt.exe")
        assert not os.path.exists(os.path.join(ROOT, rtl_name))
        assert not [k for k in os.listdir(ROOT) if "\u202e" in k]
        # Nothing left to resume.
        assert page.evaluate("Object.keys(localStorage).filter(k => k.startsWith('weir-upload:')).length") == 0

        if SCREENSHOT:
            page.screenshot(path=SCREENSHOT, full_page=True)

        # A new folder, opened and filled by a synthetic drop.
        page.fill("#mkdir-name", "inbox")
        page.press("#mkdir-name", "Enter")
        expect(page).to_have_url(server.url + "/files/inbox/")
        # Created on the server by the page's empty PUT, before anything is stored in it.
        assert os.path.isdir(os.path.join(ROOT, "inbox"))
        assert os.listdir(os.path.join(ROOT, "inbox")) == []
        page.evaluate(
            """() => {
                const bytes = new Uint8Array(256 * 1200);
                for (let i = 0; i < bytes.length; i++) bytes[i] = i % 256;
                const dt = new DataTransfer();
                dt.items.add(new File([bytes], "dropped.bin"));
                const target = document.getElementById("drop");
                target.dispatchEvent(new DragEvent("drop", { dataTransfer: dt, bubbles: true, cancelable: true }));
            }"""
        )
        dropped_sum = wait_done(page, "inbox/dropped.bin")
        assert dropped_sum == hashlib.sha256(dropped_data).hexdigest()
        with open(os.path.join(ROOT, "inbox", "dropped.bin"), "rb") as f:
            assert f.read() == dropped_data
        expect(listed_link(page, "dropped.bin")).to_have_count(1)

        # Browse: back to the root by the breadcrumb, into the folder by its link; reload
        # the folder's URL (the page again, not JSON); download a file.
        page.locator("#crumbs a").first.click()
        expect(listed_link(page, "inbox/")).to_have_count(1)
        listed_link(page, "inbox/").click()
        expect(page).to_have_url(server.url + "/files/inbox/")
        page.reload()
        expect(listed_link(page, "dropped.bin")).to_have_count(1)
        with page.expect_download() as download:
            listed_link(page, "dropped.bin").click()
        saved = os.path.join(WORK, "downloaded.bin")
        download.value.save_as(saved)
        with open(saved, "rb") as f:
            assert f.read() == dropped_data

        # Sort by size, largest first: big.bin leads the files.
        page.locator("#crumbs a").first.click()
        expect(listed_link(page, "big.bin")).to_have_count(1)
        page.click("th button[data-key=size]")
        page.click("th button[data-key=size]")
        expect(page.locator("th[aria-sort=descending] button[data-key=size]")).to_have_count(1)
        first_file = page.locator("#listing tbody tr td.name a[download]").first
        expect(first_file).to_have_text("big.bin")

        # Delete, after the confirmation.
        page.click('button[aria-label="Delete small.txt"]')
        expect(listed_link(page, "small.txt")).to_have_count(0)
        assert not os.path.exists(os.path.join(ROOT, "small.txt"))
        assert ("confirm", "Delete small.txt?") in dialogs

        # Pause, resume, cancel, and a reloaded tab: uploads slowed down to 8 MiB/s so that
        # each is caught while it runs.
        cdp = context.new_cdp_session(page)
        cdp.send("Network.enable")
        cdp.send("Network.emulateNetworkConditions", {
            "offline": False, "latency": 0, "downloadThroughput": -1,
            "uploadThroughput": 8 * 1024 * 1024})
        slow = [write(os.path.join(src, f"slow{i}.bin"), os.urandom(24 << 20)) for i in range(3)]

        def pick(paths):
            with page.expect_file_chooser() as chooser:
                page.click("#pick-files")
            chooser.value.set_files(paths)

        def sent(name):
            return int(row(page, name).locator("progress").evaluate("p => p.value"))

        def wait_sent(name, at_least):
            deadline = time.time() + 60
            while sent(name) < at_least:
                assert time.time() < deadline, f"{name} does not progress"
                page.wait_for_timeout(50)

        pick([slow[0]])
        wait_sent("slow0.bin", 1 << 20)
        page.click('button[aria-label="Pause slow0.bin"]')
        expect(row(page, "slow0.bin")).to_have_attribute("data-state", "paused")
        held = sent("slow0.bin")
        page.wait_for_timeout(500)
        assert sent("slow0.bin") == held and held < (24 << 20)
        page.click('button[aria-label="Resume slow0.bin"]')
        wait_done(page, "slow0.bin")
        same_file(slow[0], os.path.join(ROOT, "slow0.bin"))

        pick([slow[1]])
        wait_sent("slow1.bin", 1 << 20)
        page.click('button[aria-label="Cancel slow1.bin"]')
        expect(row(page, "slow1.bin")).to_have_attribute("data-state", "cancelled")
        page.wait_for_timeout(500)
        assert not os.path.exists(os.path.join(ROOT, "slow1.bin"))

        # A reload in the middle: picking the same file again asks the saved upload URL for
        # its offset instead of creating a new upload.
        pick([slow[2]])
        wait_sent("slow2.bin", 2 << 20)
        page.reload()
        expect(page.locator("#resumable-hint")).to_contain_text("slow2.bin")
        first = []
        page.on("request", lambda r: first.append((r.method, r.url)) if "slow2" in r.url or "/uploads/" in r.url else None)
        cdp = context.new_cdp_session(page)
        cdp.send("Network.enable")
        cdp.send("Network.emulateNetworkConditions", {
            "offline": False, "latency": 0, "downloadThroughput": -1, "uploadThroughput": -1})
        pick([slow[2]])
        wait_done(page, "slow2.bin")
        same_file(slow[2], os.path.join(ROOT, "slow2.bin"))
        assert first[0][0] == "HEAD" and "/uploads/" in first[0][1], first
        assert not [m for m, u in first if m == "PUT"], first

        # Phone width: nothing wider than the screen.
        page.set_viewport_size({"width": 360, "height": 740})
        assert page.evaluate("document.documentElement.scrollWidth") <= 360
        assert not errors, errors
        context.close()

        # Under a token (reads too): asked once, kept for the session; links work by cookie.
        server.stop()
        server = Server("--token", "s3cret t", "--token-read", "--cors-origin", app_origin)
        server.port = 0
        server.start()
        context = browser.new_context(accept_downloads=True)
        page = context.new_page()
        page.on("dialog", on_dialog)
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(server.url + "/")
        expect(page.locator("#token-form")).to_be_visible()
        page.fill("#token", "s3cret t")
        page.press("#token", "Enter")
        expect(listed_link(page, "big.bin")).to_have_count(1)
        expect(page.locator("#token-form")).to_be_hidden()
        with page.expect_download() as download:
            listed_link(page, "<img src=x onerror=alert(1)>.txt").click()
        download.value.save_as(saved)
        same_file(xss[0], saved)
        with page.expect_file_chooser() as chooser:
            page.click("#pick-files")
        chooser.value.set_files([small])
        assert wait_done(page, "small.txt") == sha256_file(small)
        # Reloading keeps the token (sessionStorage); the cookie reads, it never writes.
        page.reload()
        expect(listed_link(page, "small.txt")).to_have_count(1)
        cookie = [c for c in context.cookies() if c["name"] == "weir-token"][0]
        assert cookie["path"] == "/files/" and cookie["sameSite"] == "Strict", cookie
        header = {"Cookie": f"weir-token={cookie['value']}"}
        with urllib.request.urlopen(urllib.request.Request(server.url + "/files/small.txt", headers=header)) as r:
            assert r.status == 200
        for method in ["DELETE", "PUT"]:
            try:
                urllib.request.urlopen(urllib.request.Request(
                    server.url + "/files/small.txt", method=method, headers=header, data=b"" if method == "PUT" else None))
                raise AssertionError(f"{method} with the cookie alone was accepted")
            except urllib.error.HTTPError as e:
                assert e.code == 401, e.code
        assert os.path.exists(os.path.join(ROOT, "small.txt"))
        assert not errors, errors

        # CORS: a page of the allowed origin creates, appends and completes a resumable
        # upload with its token and reads the answers; another origin's page cannot.
        other = context.new_page()
        cross_origin_upload = """async (base) => {
            const auth = { Authorization: "Bearer s3cret t" };
            const created = await fetch(base + "/files/cors.txt", { method: "PUT", headers: {
                ...auth, "Upload-Complete": "?0", "Upload-Length": "5" } });
            const location = created.headers.get("Location");
            const done = await fetch(new URL(location, base), { method: "PATCH", body: "cross", headers: {
                ...auth, "Content-Type": "application/partial-upload", "Upload-Offset": "0",
                "Upload-Complete": "?1" } });
            return { status: done.status, location, sha256: (await done.json()).sha256 };
        }"""
        other.goto(app_origin + "/app.html")
        result = other.evaluate(cross_origin_upload, server.url)
        assert result["status"] == 201 and result["location"].startswith("/uploads/"), result
        assert result["sha256"] == hashlib.sha256(b"cross").hexdigest(), result
        with open(os.path.join(ROOT, "cors.txt"), "rb") as f:
            assert f.read() == b"cross"
        other.goto(other_origin + "/app.html")
        blocked = other.evaluate(
            "async (base) => { try { await fetch(base + '/files/'); return 'read'; } "
            "catch (e) { return 'blocked'; } }", server.url)
        assert blocked == "blocked", blocked

        # The default anonymous server (with --cors-origin): a page of another origin stores
        # nothing with what a browser sends without a preflight, nor does a page whose name
        # was rebound to 127.0.0.1; the listed origin still writes.
        server.stop()
        server = Server("--cors-origin", app_origin)
        server.port = 0
        server.start()
        stored_before = sorted(os.listdir(ROOT))
        cross_site_writes(other, other_origin, server.url)
        write_from_listed = """async (base) => {
            const form = new FormData();
            form.append("f", new Blob(["listed"]), "listed.txt");
            return (await fetch(base + "/files/", { method: "POST", body: form })).status;
        }"""
        other.goto(app_origin + "/app.html")
        assert other.evaluate(write_from_listed, server.url) == 201
        assert sorted(os.listdir(ROOT)) == sorted(stored_before + ["listed.txt"]), os.listdir(ROOT)
        rebound = context.new_page()
        rebound.goto(f"http://attacker.example:{server.port}/")
        statuses = rebound.evaluate("""async () => {
            const put = await fetch("/files/rebound.txt", { method: "PUT", body: "rebound" });
            const listing = await fetch("/files/");
            const del = await fetch("/files/listed.txt", { method: "DELETE" });
            return [put.status, listing.status, del.status];
        }""")
        assert statuses == [421, 421, 421], statuses
        assert sorted(os.listdir(ROOT)) == sorted(stored_before + ["listed.txt"]), os.listdir(ROOT)
        browser.close()
    server.stop()
    print("page.py: all checks passed")


if __name__ == "__main__":
    try:
        main()
    finally:
        for proc in Server.running:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
