"""weir's browser page in headless Chromium (Playwright for Python), against `weir serve`;
and what pages of other origins (and a DNS-rebound name) cannot do to it.

Run by tests/browser/main.rs with: WEIR (the binary), WORK (an empty directory), CHROMIUM
(the browser's executable); WEIR_PAGE_SCREENSHOT (optional) is where to save the screenshot of
a realistic use (docs/page.png). Screenshots of each part are saved in WORK/shots/, after the
DOM was checked (what they show is asserted, not looked at).

To check that a test fails against an older page: WEIR_PAGE_OLD_ASSETS=DIR (a directory with
that page's index.html, weir.js and weir.css, e.g. from `git show main:crates/weir-cli/assets/…`)
serves those instead of the binary's, and WEIR_PAGE_PARTS=many,errors (names of the parts
below, comma-separated) runs only those parts.

The script runs the server itself (it must kill it at a moment only the browser's traffic
shows, and start it again on the same port and root): SIGKILL while the large file's second
append is on its way, then a new `weir serve`; the page must resume from the offset the
server kept and finish. Exits non-zero (an AssertionError) on any failure.
"""

import http.server
import threading
import hashlib
import json
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
OLD_ASSETS = os.environ.get("WEIR_PAGE_OLD_ASSETS")
PARTS = [p for p in os.environ.get("WEIR_PAGE_PARTS", "").split(",") if p]
ROOT = os.path.join(WORK, "root")
SHOTS = os.path.join(WORK, "shots")
PARALLEL = 5  # the page's uploads in flight at once (weir.js: PARALLEL)
CHUNK = 64 * 1024 * 1024  # the page's append size (weir.js: CHUNK)
BIG = 200 * 1024 * 1024
TIMEOUT_MS = 120_000


class Server:
    """`weir serve` on ROOT; `port` is kept across restarts."""

    running = []  # every process started, so that a failing run leaves none behind

    def __init__(self, *args, root=ROOT):
        self.args = list(args)
        self.port = 0
        self.proc = None
        self.root = root

    def start(self):
        os.makedirs(self.root, exist_ok=True)
        log = open(os.path.join(WORK, "server-stderr.log"), "ab")
        self.proc = subprocess.Popen(
            [WEIR, "serve", "--root", self.root, "--listen", f"127.0.0.1:{self.port}", *self.args],
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


def part_basics(browser):
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
    if True:
        context = browser.new_context(accept_downloads=True, viewport={"width": 1000, "height": 900})
        page = new_page(context)
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

        # Uploads slowed down to 32 MiB/s until the restart, so that the second append is
        # still on its way when this script hears of it, even on a busy machine.
        throttle = context.new_cdp_session(page)
        throttle.send("Network.enable")
        throttle.send("Network.emulateNetworkConditions", {
            "offline": False, "latency": 0, "downloadThroughput": -1,
            "uploadThroughput": 32 * 1024 * 1024})

        # Keyboard: focus "Choose files", Enter opens the picker.
        with page.expect_file_chooser() as chooser:
            page.locator("#pick-files").press("Enter")
        chooser.value.set_files([small, big, *xss, rtl])

        deadline = time.time() + 60
        while not state["killed"]:
            assert time.time() < deadline, "the large upload never reached its second append"
            page.wait_for_timeout(50)
        page.wait_for_timeout(1000)
        throttle.send("Network.emulateNetworkConditions", {
            "offline": False, "latency": 0, "downloadThroughput": -1, "uploadThroughput": -1})
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
        page = new_page(context)
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
        context.close()
    server.stop()


def new_page(context, errors=None):
    """A page of `context`; with WEIR_PAGE_OLD_ASSETS, the older page's files are served
    instead of the binary's (the script, the style sheet, and the HTML of `/` and folders)."""
    page = context.new_page()
    if OLD_ASSETS:
        types = {"weir.js": "text/javascript", "weir.css": "text/css", "index.html": "text/html"}

        def old(route, name):
            with open(os.path.join(OLD_ASSETS, name), "rb") as f:
                route.fulfill(status=200, body=f.read(), headers={
                    "content-type": types[name] + "; charset=utf-8", "cache-control": "no-store",
                    # serve/page.rs's CONTENT_SECURITY_POLICY: the same policy as the binary's page.
                    "content-security-policy": "default-src 'none'; script-src 'self'; "
                    "style-src 'self'; connect-src 'self'; img-src 'self'; form-action 'self'; "
                    "base-uri 'none'; frame-ancestors 'none'",
                    "x-content-type-options": "nosniff"})

        page.route("**/assets/weir.js", lambda r: old(r, "weir.js"))
        page.route("**/assets/weir.css", lambda r: old(r, "weir.css"))

        def document(route):
            if route.request.resource_type == "document":
                old(route, "index.html")
            else:
                route.continue_()

        page.route(re.compile(r"^https?://[^/]+(/|/files/[^?]*/)$"), document)
    if errors is not None:
        page.on("pageerror", lambda e: errors.append(str(e)))
    page.set_default_timeout(15_000)
    return page


def shot(page, name):
    os.makedirs(SHOTS, exist_ok=True)
    path = os.path.join(SHOTS, name + ".png")
    page.screenshot(path=path, full_page=True)
    assert os.path.getsize(path) > 0
    return path


def pick_files(page, paths, button="#pick-files"):
    with page.expect_file_chooser() as chooser:
        page.click(button)
    chooser.value.set_files(paths)


def listed_names(page):
    return page.locator("#listing td.name a").all_text_contents()


def put(url, data, headers=None):
    request = urllib.request.Request(url, data=data, method="PUT", headers=headers or {})
    with urllib.request.urlopen(request) as r:
        return r.status


def accept_dialogs(page):
    seen = []

    def on_dialog(d):
        seen.append((d.type, d.message))
        d.accept()

    page.on("dialog", on_dialog)
    return seen


class Uploads:
    """The page's requests as the browser sends them: listing fetches, and how many uploads
    (PUT, PATCH, POST of a form) are in flight at once."""

    def __init__(self, page):
        self.listings = []
        self.in_flight = 0
        self.most = 0
        self.sent = []
        page.on("request", self.on_request)
        # The answer's head (before the page sees the answer, so before it starts another).
        page.on("response", lambda r: self.on_end(r.request))
        page.on("requestfailed", self.on_end)

    @staticmethod
    def is_upload(r):
        return r.method in ("PUT", "PATCH", "POST") and ("/files/" in r.url or "/uploads/" in r.url)

    def on_request(self, r):
        if r.method == "GET" and "/files/" in r.url and "limit=" in r.url:
            self.listings.append(r.url)
        if self.is_upload(r):
            self.sent.append((r.method, r.url, r.headers))
            self.in_flight += 1
            self.most = max(self.most, self.in_flight)

    def on_end(self, r):
        if self.is_upload(r):
            self.in_flight -= 1


def part_many(browser):
    """Issue 35 point 5 and the doubled rows of point 6: many small files at once, one overall
    line, the list of files folded, one listing fetch at the end, each row once."""
    n = 300
    root = os.path.join(WORK, "root-many")
    server = Server(root=root).start()
    src = os.path.join(WORK, "many")
    os.makedirs(src)
    files = [write(os.path.join(src, f"sample-{i:04d}.csv"), os.urandom(500 + (i * 37) % 3000)) for i in range(n)]
    context = browser.new_context(viewport={"width": 1000, "height": 900})
    errors = []
    page = new_page(context, errors)
    page.goto(server.url + "/files/run-17/")
    expect(page.locator("#status")).to_contain_text("empty")
    seen = Uploads(page)
    t0 = time.monotonic()
    pick_files(page, files)
    # Every file stored (the old page's rows have the same states).
    expect(page.locator("#transfers li[data-state=done]")).to_have_count(n, timeout=TIMEOUT_MS)
    elapsed = time.monotonic() - t0
    # The listing settles (an older page goes on fetching it for a while): then each file is
    # listed once.
    settled, last = time.time(), len(seen.listings)
    while time.time() - settled < 1.5:
        page.wait_for_timeout(100)
        if len(seen.listings) != last:
            settled, last = time.time(), len(seen.listings)
    expect(page.locator("#listing tbody tr")).to_have_count(n)
    names = listed_names(page)
    assert len(names) == n and len(set(names)) == n, (len(names), len(set(names)))
    assert sorted(names) == sorted(os.path.basename(f) for f in files)
    for f in files:
        same_file(f, os.path.join(root, "run-17", os.path.basename(f)))
    # One listing fetch for the batch, at its end; several uploads in flight, at most PARALLEL.
    assert len(seen.listings) == 1, (len(seen.listings), seen.listings[:5])
    assert 2 <= seen.most <= PARALLEL, seen.most
    # One line for all: files, bytes, time; the list of 300 folded, shown on demand.
    overall = page.locator("#overall")
    expect(overall).to_be_visible()
    expect(overall).to_have_attribute("data-state", "idle")
    expect(overall).to_have_attribute("data-done", str(n))
    expect(overall).to_contain_text(f"{n} of {n} files uploaded")
    assert page.locator("#transfers-list").evaluate("d => d.open") is False
    expect(page.locator("#transfers li").first).to_be_hidden()
    shot(page, "many-folded")
    page.click("#transfers-summary")
    expect(page.locator("#transfers li").first).to_be_visible()
    expect(page.locator("#transfers-summary")).to_contain_text(f"({n})")
    print(f"page.py: {n} small files in {elapsed:.1f} s, {n / elapsed:.0f} files/s "
          f"(at most {seen.most} in flight, {len(seen.listings)} listing fetch)")
    # A folder with folders in it, through "Choose a folder": its files packed with their
    # relative paths, stored where they were.
    tree = os.path.join(WORK, "plate-run")
    tree_files = {}
    for sub in ["raw", "raw/channel 2", "processed"]:
        os.makedirs(os.path.join(tree, sub))
        for i in range(15):
            rel = f"plate-run/{sub}/well-{i:02d}.csv"
            tree_files[rel] = write(os.path.join(WORK, rel), os.urandom(700 + i))
    pick_files(page, [tree], "#pick-folder")
    expect(overall).to_contain_text("45 of 45 files uploaded", timeout=TIMEOUT_MS)
    for rel, path in tree_files.items():
        same_file(path, os.path.join(root, "run-17", rel))
    expect(listed_link(page, "plate-run/")).to_have_count(1)
    expect(page.locator("#listing tbody tr")).to_have_count(n + 1)
    assert len(seen.listings) == 2, len(seen.listings)

    # While a batch runs, the line has the speed and the time left (uploads slowed down to
    # 512 KiB/s so that the line is seen while they run).
    cdp = context.new_cdp_session(page)
    cdp.send("Network.enable")
    cdp.send("Network.emulateNetworkConditions", {
        "offline": False, "latency": 0, "downloadThroughput": -1, "uploadThroughput": 512 * 1024})
    more = [write(os.path.join(src, f"more-{i:03d}.csv"), os.urandom(20_000)) for i in range(60)]
    pick_files(page, more)
    expect(overall).to_have_text(re.compile(r"^\d+ of 60 files · .* of .* · .*/s · .* left"))
    expect(overall).to_have_attribute("data-state", "idle", timeout=TIMEOUT_MS)
    expect(overall).to_contain_text("60 of 60 files uploaded")
    expect(page.locator("#listing tbody tr")).to_have_count(n + 61)
    assert len(seen.listings) == 3, len(seen.listings)
    assert not errors, errors
    context.close()
    server.stop()


def part_errors(browser):
    """Issue 35 point 6: a refusal that no retry can change (507 quota, 413, 403) ends the
    upload with the server's message, and nothing more is sent for it."""
    src = os.path.join(WORK, "errors")
    os.makedirs(src)
    two = write(os.path.join(src, "two.bin"), os.urandom(2 << 20))  # one PUT
    six = write(os.path.join(src, "six.bin"), os.urandom(6 << 20))  # resumable
    root = os.path.join(WORK, "root-errors")
    tokens = write(os.path.join(WORK, "tokens-errors"), b"reader-token read\n")
    cases = [
        (["--max-storage", "1MiB"], None, "storage quota exceeded", "507"),
        (["--max-upload", "1MiB"], None, "larger than the limit", "413"),
        (["--token-file", tokens], "reader-token", "", "403"),
    ]
    for args, token, message, status in cases:
        server = Server(*args, root=root).start()
        context = browser.new_context()
        errors = []
        page = new_page(context, errors)
        page.goto(server.url + "/")
        if token:
            page.fill("#token", token)
            page.press("#token", "Enter")
            expect(page.locator("#forget")).to_be_visible()
        seen = Uploads(page)
        pick_files(page, [two, six])
        for name in ["two.bin", "six.bin"]:
            expect(row(page, name)).to_have_attribute("data-state", "failed")
            detail = row(page, name).locator(".detail").first
            expect(detail).to_contain_text(message)
            expect(detail).to_contain_text(f"({status})")
            expect(detail).to_have_class(re.compile("error"))
            expect(page.locator(f'button[aria-label="Retry {name}"]')).to_be_visible()
        # Nothing more is sent: no retry.
        sent = len(seen.sent)
        page.wait_for_timeout(2500)
        assert len(seen.sent) == sent, seen.sent
        assert sent == 2, seen.sent
        expect(page.locator("#overall")).to_contain_text("2 failed")
        shot(page, f"refused-{status}")
        assert not errors, errors
        context.close()
        server.stop()
        assert not [f for f in os.listdir(root) if not f.startswith(".")], os.listdir(root)


def part_conflicts(browser):
    """Issue 35 point 2 (the page): a name that is taken is asked about (replace, keep both,
    skip), once for a whole pick if asked to; nothing is overwritten without a word."""
    root = os.path.join(WORK, "root-conflicts")
    server = Server(root=root).start()
    for name, data in [("report.pdf", b"old report"), ("notes.txt", b"old notes")]:
        assert put(server.url + "/files/" + name, data) == 201
    src = os.path.join(WORK, "conflicts")
    os.makedirs(src)
    report = write(os.path.join(src, "report.pdf"), b"new report")
    notes = write(os.path.join(src, "notes.txt"), b"new notes")
    fresh = write(os.path.join(src, "fresh.txt"), b"fresh")
    context = browser.new_context()
    errors = []
    page = new_page(context, errors)
    page.goto(server.url + "/")
    expect(listed_link(page, "report.pdf")).to_have_count(1)
    seen = Uploads(page)
    dialog = page.locator("#conflict")

    def stored(name):
        with open(os.path.join(root, name), "rb") as f:
            return f.read()

    # Three files, two names taken: asked once, "keep both" for all.
    pick_files(page, [report, notes, fresh])
    expect(dialog).to_be_visible()
    expect(page.locator("#conflict-name")).to_have_text(re.compile(r"^(report\.pdf|notes\.txt)$"))
    expect(page.locator("#conflict-all")).to_be_visible()
    shot(page, "conflict-asked")
    page.check("#conflict-all")
    dialog.get_by_role("button", name="Keep both").click()
    for name in ["report.pdf", "notes.txt", "fresh.txt"]:
        wait_done(page, name)
    expect(dialog).to_be_hidden()
    expect(row(page, "report.pdf")).to_have_attribute("data-saved-as", "report (1).pdf")
    expect(row(page, "notes.txt")).to_have_attribute("data-saved-as", "notes (1).txt")
    assert stored("report.pdf") == b"old report" and stored("report (1).pdf") == b"new report"
    assert stored("notes.txt") == b"old notes" and stored("notes (1).txt") == b"new notes"
    assert stored("fresh.txt") == b"fresh"
    # Every creation said "only if absent".
    assert all(h.get("if-none-match") == "*" for m, u, h in seen.sent), seen.sent
    expect(listed_link(page, "report (1).pdf")).to_have_count(1)

    # One file: no "for all" box; replace, with If-Match and the ETag of what is there.
    write(report, b"newer report")
    pick_files(page, [report])
    expect(dialog).to_be_visible()
    expect(page.locator("#conflict-all")).to_be_hidden()
    dialog.get_by_role("button", name="Replace").click()
    expect(page.locator('#transfers li[data-path="report.pdf"][data-state=done]')).to_have_count(2)
    assert stored("report.pdf") == b"newer report"
    replaced = [h for m, u, h in seen.sent if u.endswith("/files/report.pdf") and "if-match" in h]
    assert len(replaced) == 1 and replaced[0]["if-match"].startswith('"'), seen.sent

    # Skip: nothing sent, nothing changed.
    write(notes, b"notes never sent")
    pick_files(page, [notes])
    expect(dialog).to_be_visible()
    dialog.get_by_role("button", name="Skip").click()
    expect(page.locator('#transfers li[data-path="notes.txt"][data-state=skipped]')).to_have_count(1)
    assert stored("notes.txt") == b"old notes"
    expect(page.locator("#overall")).to_contain_text("1 skipped")
    shot(page, "conflict-done")
    assert not errors, errors
    context.close()
    server.stop()


def part_folders(browser):
    """Issue 35 point 7: folders deleted from the page (empty ones; a full one is refused and
    said so)."""
    root = os.path.join(WORK, "root-folders")
    os.makedirs(os.path.join(root, "empty-dir"))
    os.makedirs(os.path.join(root, "full-dir"))
    write(os.path.join(root, "full-dir", "keep.txt"), b"keep")
    server = Server(root=root).start()
    context = browser.new_context(viewport={"width": 1000, "height": 900})
    errors = []
    page = new_page(context, errors)
    dialogs = accept_dialogs(page)
    page.goto(server.url + "/")
    expect(listed_link(page, "empty-dir/")).to_have_count(1)
    page.click('button[aria-label="Delete folder empty-dir"]')
    expect(listed_link(page, "empty-dir/")).to_have_count(0)
    expect(page.locator("#status")).to_have_text("Deleted empty-dir/.")
    assert not os.path.exists(os.path.join(root, "empty-dir"))
    page.click('button[aria-label="Delete folder full-dir"]')
    expect(page.locator("#status")).to_contain_text("full-dir/ is not empty")
    expect(listed_link(page, "full-dir/")).to_have_count(1)
    assert os.path.exists(os.path.join(root, "full-dir", "keep.txt"))
    assert len(dialogs) == 2, dialogs
    shot(page, "folder-not-empty")
    assert not errors, errors
    context.close()
    server.stop()


def part_paging(browser):
    """Issue 35 point 7: deleting a file on a later page of a large folder keeps that page and
    the message; a filter box over what is loaded."""
    root = os.path.join(WORK, "root-paging")
    big = os.path.join(root, "logs")
    os.makedirs(big)
    for i in range(1005):
        write(os.path.join(big, f"log-{i:04d}.txt"), b"x")
    server = Server(root=root).start()
    context = browser.new_context(viewport={"width": 1000, "height": 900})
    errors = []
    page = new_page(context, errors)
    accept_dialogs(page)
    page.goto(server.url + "/files/logs/")
    expect(page.locator("#listing tbody tr")).to_have_count(1000)
    page.click("#more")
    expect(page.locator("#listing tbody tr")).to_have_count(1005)
    page.click('button[aria-label="Delete log-1003.txt"]')
    expect(listed_link(page, "log-1003.txt")).to_have_count(0)
    expect(page.locator("#status")).to_have_text("Deleted logs/log-1003.txt.")
    page.wait_for_timeout(1000)
    expect(page.locator("#listing tbody tr")).to_have_count(1004)
    expect(listed_link(page, "log-1004.txt")).to_have_count(1)
    expect(page.locator("#status")).to_have_text("Deleted logs/log-1003.txt.")
    assert not os.path.exists(os.path.join(big, "log-1003.txt"))

    # The filter: over what is loaded, said how many match.
    page.fill("#filter", "log-09")
    expect(page.locator("#listing tbody tr")).to_have_count(100)
    expect(page.locator("#shown")).to_contain_text("100 of 1,004")
    assert all(n.startswith("log-09") for n in listed_names(page))
    shot(page, "filter")
    page.fill("#filter", "")
    expect(page.locator("#listing tbody tr")).to_have_count(1004)
    assert not errors, errors
    context.close()
    server.stop()


def part_token(browser):
    """Issue 35 point 7: the token box offered from the start; Delete buttons only for what
    the token may delete, when the server says (`GET /whoami`: here answered by the test, the
    shape weir.js documents), and all of them when it does not."""
    root = os.path.join(WORK, "root-token")
    os.makedirs(os.path.join(root, "raw"))
    write(os.path.join(root, "raw", "a.csv"), b"a")
    write(os.path.join(root, "data.csv"), b"data")
    server = Server(root=root).start()
    context = browser.new_context()
    errors = []
    page = new_page(context, errors)
    page.goto(server.url + "/")
    expect(page.locator("#token-form")).to_be_visible()
    expect(page.locator("#forget")).to_be_hidden()
    expect(listed_link(page, "data.csv")).to_have_count(1)
    # The server's own /whoami, no tokens: anyone may do everything, every Delete offered.
    expect(page.locator('button[aria-label="Delete data.csv"]')).to_be_visible()
    expect(page.locator("#who")).to_have_text("No token: read, write, delete")

    def whoami(body, listed="data.csv"):
        page.unroute("**/whoami")
        page.route("**/whoami", lambda r: r.fulfill(
            status=200, content_type="application/json", body=json.dumps(body)))
        page.reload()
        expect(listed_link(page, listed)).to_have_count(1)

    whoami({"token": "uploader", "scopes": ["read", "write"], "prefix": None})
    expect(page.locator("#who")).to_have_text("Token uploader: read, write")
    expect(page.locator("#listing button", has_text="Delete")).to_have_count(0)
    shot(page, "no-delete-scope")
    whoami({"token": "raw-cleaner", "scopes": ["read", "delete"], "prefix": "raw"})
    expect(page.locator('button[aria-label="Delete folder raw"]')).to_be_visible()
    expect(page.locator('button[aria-label="Delete data.csv"]')).to_have_count(0)
    listed_link(page, "raw/").click()
    expect(page.locator('button[aria-label="Delete a.csv"]')).to_be_visible()
    whoami({"token": None, "scopes": ["read", "write", "delete"], "prefix": None}, "a.csv")
    expect(page.locator('button[aria-label="Delete a.csv"]')).to_be_visible()
    # An answer of another shape is ignored.
    page.unroute("**/whoami")
    page.route("**/whoami", lambda r: r.fulfill(status=200, content_type="application/json", body='{"scopes": "all"}'))
    page.reload()
    expect(listed_link(page, "a.csv")).to_have_count(1)
    expect(page.locator('button[aria-label="Delete a.csv"]')).to_be_visible()
    expect(page.locator("#who")).to_be_hidden()
    assert not errors, errors
    context.close()
    server.stop()

    # The real /whoami behind tokens: the page asks with the token typed into its box.
    tokens = os.path.join(WORK, "tokens-whoami")
    write(tokens, b"reader-secret read name=reader\ncleaner-secret read,delete raw name=raw-cleaner\n")
    server = Server("--token-file", tokens, root=root).start()
    # (A prefix token may list only its folder: the cleaner opens raw/'s URL.)
    for token, folder, listed, who, deletable, kept in [
        ("reader-secret", "/", "data.csv", "Token reader: read", [],
         ["Delete data.csv", "Delete folder raw"]),
        ("cleaner-secret", "/files/raw/", "a.csv", "Token raw-cleaner: read, delete in raw/",
         ["Delete a.csv"], []),
    ]:
        context = browser.new_context()
        page = new_page(context, errors)
        page.goto(server.url + folder)
        expect(page.locator("#status")).to_contain_text("Reading needs a token")
        page.fill("#token", token)
        page.press("#token", "Enter")
        expect(listed_link(page, listed)).to_have_count(1)
        expect(page.locator("#who")).to_have_text(who)
        for label in deletable:
            expect(page.locator(f'button[aria-label="{label}"]')).to_be_visible()
        for label in kept:
            expect(page.locator(f'button[aria-label="{label}"]')).to_have_count(0)
        shot(page, "whoami-" + token)
        context.close()
    assert not errors, errors
    server.stop()


def part_screenshot(browser):
    """The README's picture (docs/page.png): a lab's instrument data uploaded from the page;
    what it shows is checked first."""
    root = os.path.join(WORK, "root-shot")
    for d in ["microscope", "spectrometer", "shared-protocols"]:
        os.makedirs(os.path.join(root, d))
    server = Server(root=root).start()
    src = os.path.join(WORK, "lab")
    os.makedirs(src)
    names = {"plate-07_2026-11-30.tif": 3_400_000, "plate-08_2026-11-30.tif": 3_350_000,
             "run-0412_absorbance.csv": 184_000, "run-0412_settings.json": 2_300,
             "calibration-2026-11.pdf": 912_000, "README-run-0412.md": 4_100}
    paths = [write(os.path.join(src, n), os.urandom(size)) for n, size in names.items()]
    context = browser.new_context(viewport={"width": 1000, "height": 760})
    page = new_page(context)
    page.goto(server.url + "/")
    expect(listed_link(page, "microscope/")).to_have_count(1)
    pick_files(page, paths)
    expect(page.locator("#overall")).to_contain_text(f"{len(names)} of {len(names)} files uploaded", timeout=TIMEOUT_MS)
    expect(page.locator("#listing tbody tr")).to_have_count(len(names) + 3)
    assert sorted(listed_names(page)) == sorted([*names, "microscope/", "spectrometer/", "shared-protocols/"])
    expect(page.locator("#token-form")).to_be_visible()
    expect(page.locator("#transfers li[data-state=done]")).to_have_count(len(names))
    path = shot(page, "page")
    if SCREENSHOT:
        page.screenshot(path=SCREENSHOT, full_page=True)
    context.close()
    server.stop()
    return path


def main():
    parts = {"basics": part_basics, "many": part_many, "errors": part_errors,
             "conflicts": part_conflicts, "folders": part_folders, "paging": part_paging,
             "token": part_token,
             "screenshot": part_screenshot}
    unknown = [p for p in PARTS if p not in parts]
    assert not unknown, f"unknown parts {unknown}; known: {list(parts)}"
    with sync_playwright() as p:
        # attacker.example resolves to 127.0.0.1, as a DNS-rebinding page's name would.
        browser = p.chromium.launch(executable_path=CHROMIUM, args=[
            "--no-sandbox", "--host-resolver-rules=MAP attacker.example 127.0.0.1"])
        for name, part in parts.items():
            if PARTS and name not in PARTS:
                continue
            print(f"page.py: {name}", flush=True)
            part(browser)
        browser.close()
    print("page.py: all checks passed")


if __name__ == "__main__":
    try:
        main()
    finally:
        for proc in Server.running:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
