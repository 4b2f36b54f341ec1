//! WebDAV as particular clients use it, against a real `weir serve` on 127.0.0.1 (issue 34,
//! point 2): rclone's `webdav` backend with an ownCloud-style vendor (modification times kept
//! with `X-OC-Mtime`, so a second `sync` sends nothing), on both stores; and raw HTTP replaying
//! what macOS Finder sends (chunked `PUT`s with `X-Expected-Entity-Length`). rclone comes
//! through weir-testkit's `tools` (missing: skipped, or failed under `WEIR_REQUIRE_TOOLS=1`).
//! `webdav.rs` holds litmus, the round trip and the bounds; this file the clients' habits.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Child, Command};
use std::time::{Duration, UNIX_EPOCH};
use weir_testkit::tools;

#[cfg(feature = "s3")]
#[allow(dead_code)] // This binary uses only the nodes of what the S3 tests share.
mod s3_nodes;

#[path = "webdav_support/server.rs"]
#[allow(dead_code)] // `webdav.rs` reads the server's logs; this binary does not.
mod server;
use server::{TOKEN, start};

/// Sends `raw` (a whole request, `Connection: close`) and reads the answer: (status, head,
/// body as text).
fn raw(addr: SocketAddr, raw: &str) -> (u16, String, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.write_all(raw.as_bytes()).unwrap();
    let mut answer = Vec::new();
    // A server that answers before the whole body may reset; what it sent is read first.
    let _ = s.read_to_end(&mut answer);
    let answer = String::from_utf8_lossy(&answer).into_owned();
    let (head, body) = answer.split_once("\r\n\r\n").unwrap_or((&answer, ""));
    let status = head.get(9..12).and_then(|s| s.parse().ok()).unwrap_or(0);
    (status, head.to_owned(), body.to_owned())
}

/// A request with a `Content-Length` body.
fn request(addr: SocketAddr, head: &str, body: &str) -> (u16, String, String) {
    let head = head.replace('\n', "\r\n");
    raw(
        addr,
        &format!(
            "{head}Host: {addr}\r\nAuthorization: Bearer {TOKEN}\r\nConnection: close\r\n\
             Content-Length: {}\r\n\r\n{body}",
            body.len()
        ),
    )
}

fn propfind_lastmodified(addr: SocketAddr, path: &str) -> String {
    let body = "<?xml version=\"1.0\"?><d:propfind xmlns:d=\"DAV:\"><d:prop>\
                <d:getlastmodified/></d:prop></d:propfind>";
    let (status, _, answer) = request(addr, &format!("PROPFIND {path} HTTP/1.1\nDepth: 0\n"), body);
    assert_eq!(status, 207, "{answer}");
    let start = answer.find("<D:getlastmodified>").expect("getlastmodified") + 19;
    let end = answer[start..].find('<').unwrap() + start;
    answer[start..end].to_owned()
}

/// `X-OC-Mtime` on a raw `PUT`: `accepted`, the time kept (in the file on the local store)
/// and answered by `PROPFIND`; a bad value is `400` and stores nothing.
fn oc_mtime_at(addr: SocketAddr, root: Option<&Path>) {
    // 2001-09-09T01:46:40Z.
    let (status, head, body) = request(addr, "PUT /dav/m HTTP/1.1\nX-OC-Mtime: 1000000000\n", "x");
    assert_eq!(status, 201, "{head}\n{body}");
    assert!(
        head.to_ascii_lowercase()
            .contains("\r\nx-oc-mtime: accepted"),
        "{head}"
    );
    let date = "Sun, 09 Sep 2001 01:46:40 GMT";
    assert_eq!(propfind_lastmodified(addr, "/dav/m"), date);
    let (status, head, _) = request(addr, "GET /dav/m HTTP/1.1\n", "");
    assert_eq!(status, 200);
    assert!(head.contains(&format!("last-modified: {date}")), "{head}");
    if let Some(root) = root {
        let t = std::fs::metadata(root.join("m"))
            .unwrap()
            .modified()
            .unwrap();
        let secs = t.duration_since(UNIX_EPOCH).unwrap().as_secs();
        assert_eq!(secs, 1_000_000_000, "the file's own time");
    }
    // An older time over a newer version stands (rclone copying an older file back).
    let (status, _, _) = request(addr, "PUT /dav/m HTTP/1.1\nX-OC-Mtime: 999999999.5\n", "y");
    assert_eq!(status, 200);
    assert_eq!(
        propfind_lastmodified(addr, "/dav/m"),
        "Sun, 09 Sep 2001 01:46:39 GMT"
    );
    // A date validator that a client-set time makes ambiguous never resumes across versions.
    let (status, _, body) = request(
        addr,
        "GET /dav/m HTTP/1.1\nRange: bytes=0-0\nIf-Range: Sun, 09 Sep 2001 01:46:39 GMT\n",
        "",
    );
    assert_eq!(
        (status, body.as_str()),
        (200, "y"),
        "a weak date: the whole file"
    );
    for bad in ["soon", "-1", "1e9", "253402300800"] {
        let head = format!("PUT /dav/bad HTTP/1.1\nX-OC-Mtime: {bad}\n");
        assert_eq!(request(addr, &head, "z").0, 400, "{bad}");
        assert_eq!(request(addr, "GET /dav/bad HTTP/1.1\n", "").0, 404, "{bad}");
    }
    // Without the header the time is the commit's (now, not 2001).
    assert_eq!(request(addr, "PUT /dav/n HTTP/1.1\n", "n").0, 201);
    assert!(!propfind_lastmodified(addr, "/dav/n").contains("2001"));
    // ownCloud's PROPPATCH of `lastmodified`, as rclone's owncloud and nextcloud vendors
    // send it to set a time without sending the file again: the time changes, the bytes and
    // the ETag do not.
    let etag = |addr| {
        let (_, head, _) = request(addr, "HEAD /dav/m HTTP/1.1\n", "");
        head.lines()
            .find_map(|l| l.strip_prefix("etag: "))
            .unwrap()
            .to_owned()
    };
    let before = etag(addr);
    let set = "<?xml version=\"1.0\" encoding=\"utf-8\" ?>\n<D:propertyupdate xmlns:D=\"DAV:\">\n \
               <D:set>\n  <D:prop>\n   <lastmodified xmlns=\"DAV:\">1234567890</lastmodified>\n  \
               </D:prop>\n </D:set>\n</D:propertyupdate>\n";
    let (status, _, body) = request(addr, "PROPPATCH /dav/m HTTP/1.1\n", set);
    assert_eq!(status, 207, "{body}");
    assert!(
        body.contains("HTTP/1.1 200 OK") && !body.contains("HTTP/1.1 4"),
        "{body}"
    );
    assert_eq!(
        propfind_lastmodified(addr, "/dav/m"),
        "Fri, 13 Feb 2009 23:31:30 GMT"
    );
    assert_eq!(etag(addr), before);
    assert_eq!(request(addr, "GET /dav/m HTTP/1.1\n", "").2, "y");
    if let Some(root) = root {
        let t = std::fs::metadata(root.join("m"))
            .unwrap()
            .modified()
            .unwrap();
        let secs = t.duration_since(UNIX_EPOCH).unwrap().as_secs();
        assert_eq!(secs, 1_234_567_890, "the file's own time");
    }
    // rclone's server-side copy and move send the source's time along.
    let copy = "COPY /dav/m HTTP/1.1\nDestination: /dav/c\nX-OC-Mtime: 1111111111\n";
    let (status, head, _) = request(addr, copy, "");
    assert_eq!(status, 201, "{head}");
    assert!(head.contains("x-oc-mtime: accepted"), "{head}");
    assert_eq!(
        propfind_lastmodified(addr, "/dav/c"),
        "Fri, 18 Mar 2005 01:58:31 GMT"
    );
    let moved = "MOVE /dav/c HTTP/1.1\nDestination: /dav/d\nX-OC-Mtime: 1222222222\n";
    let (status, head, _) = request(addr, moved, "");
    assert_eq!(status, 201, "{head}");
    assert!(head.contains("x-oc-mtime: accepted"), "{head}");
    assert_eq!(
        propfind_lastmodified(addr, "/dav/d"),
        "Wed, 24 Sep 2008 02:10:22 GMT"
    );
    let bad = "COPY /dav/d HTTP/1.1\nDestination: /dav/e\nX-OC-Mtime: soon\n";
    assert_eq!(request(addr, bad, "").0, 400);
    assert_eq!(request(addr, "GET /dav/e HTTP/1.1\n", "").0, 404);
    // A folder's time cannot be set: refused, nothing stored.
    assert_eq!(request(addr, "MKCOL /dav/dir HTTP/1.1\n", "").0, 201);
    let (status, _, body) = request(addr, "PROPPATCH /dav/dir/ HTTP/1.1\n", set);
    assert_eq!(status, 207);
    assert!(body.contains("HTTP/1.1 403"), "{body}");
}

#[test]
fn x_oc_mtime_is_the_files_time() {
    let server = start(&["--token", TOKEN]);
    oc_mtime_at(server.addr, Some(&server.root));
}

#[cfg(feature = "s3")]
#[test]
fn x_oc_mtime_is_the_objects_time_on_s3() {
    let Some(weed) = s3_nodes::start_weed() else {
        return;
    };
    let store = format!("s3://{}/mtime", weir_testkit::seaweed::BUCKET);
    let node = s3_nodes::start_node(&weed, &store, &["--token", TOKEN]);
    oc_mtime_at(node.addr, None);
    // Kept as rclone's own S3 metadata, so rclone's s3 backend reads the same time.
    let direct = s3_nodes::direct(&weed);
    let path = weir_store::StorePath::parse("mtime/m").unwrap();
    let meta = s3_nodes::runtime().block_on(async {
        use weir_store::{Store, StoreObject};
        direct.open(&path).await.unwrap().object_meta().unwrap()
    });
    assert_eq!(meta.get("x-amz-meta-mtime"), Some(&b"1234567890"[..]));
}

/// macOS Finder's `PUT`: chunked, its length in `X-Expected-Entity-Length`. The whole body is
/// stored; a shorter or longer one stores nothing and leaves the old file; a length over
/// `--max-upload` is `413` before the body; a bad value `400`.
#[test]
fn finder_puts_are_held_to_their_expected_length() {
    let server = start(&["--token", TOKEN, "--max-upload", "1000"]);
    let a = server.addr;
    let chunked = |len: &str, chunks: &[&str]| {
        let mut req = format!(
            "PUT /dav/f HTTP/1.1\r\nHost: {a}\r\nAuthorization: Bearer {TOKEN}\r\n\
             Connection: close\r\nTransfer-Encoding: chunked\r\n\
             X-Expected-Entity-Length: {len}\r\n\r\n"
        );
        for c in chunks {
            req.push_str(&format!("{:x}\r\n{c}\r\n", c.len()));
        }
        req.push_str("0\r\n\r\n");
        raw(a, &req)
    };
    assert_eq!(chunked("6", &["old", "old"]).0, 201);
    assert_eq!(std::fs::read(server.root.join("f")).unwrap(), b"oldold");
    let (status, _, body) = chunked("10", &["new"]);
    assert_eq!(status, 400, "short: {body}");
    let (status, _, body) = chunked("2", &["new"]);
    assert_eq!(status, 400, "long: {body}");
    assert_eq!(chunked("5000", &["x"]).0, 413);
    assert_eq!(chunked("lots", &["x"]).0, 400);
    assert_eq!(std::fs::read(server.root.join("f")).unwrap(), b"oldold");
    let staging: Vec<_> = std::fs::read_dir(server.root.join(".weir-staging"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .collect();
    assert!(staging.is_empty(), "{staging:?}");
    assert_eq!(chunked("3", &["new"]).0, 200);
    assert_eq!(std::fs::read(server.root.join("f")).unwrap(), b"new");
}

/// The same on the S3 store: a chunked body shorter or longer than its
/// `X-Expected-Entity-Length` stores no object.
#[cfg(feature = "s3")]
#[test]
fn finder_puts_are_held_to_their_expected_length_on_s3() {
    let Some(weed) = s3_nodes::start_weed() else {
        return;
    };
    let store = format!("s3://{}/finder", weir_testkit::seaweed::BUCKET);
    let node = s3_nodes::start_node(&weed, &store, &["--token", TOKEN]);
    let a = node.addr;
    let chunked = |len: &str, body: &str| {
        raw(
            a,
            &format!(
                "PUT /dav/f HTTP/1.1\r\nHost: {a}\r\nAuthorization: Bearer {TOKEN}\r\n\
                 Connection: close\r\nTransfer-Encoding: chunked\r\n\
                 X-Expected-Entity-Length: {len}\r\n\r\n{:x}\r\n{body}\r\n0\r\n\r\n",
                body.len()
            ),
        )
        .0
    };
    assert_eq!(chunked("10", "new"), 400);
    assert_eq!(chunked("2", "new"), 400);
    assert_eq!(request(a, "GET /dav/f HTTP/1.1\n", "").0, 404);
    assert_eq!(chunked("3", "new"), 201);
    assert_eq!(request(a, "GET /dav/f HTTP/1.1\n", "").2, "new");
}

/// `weir_http_requests_total{method="PUT",status="2xx"}` from `/metrics`.
fn puts(addr: SocketAddr) -> u64 {
    let (status, _, body) = request(addr, "GET /metrics HTTP/1.1\n", "");
    assert_eq!(status, 200);
    body.lines()
        .find(|l| l.starts_with("weir_http_requests_total{method=\"PUT\",status=\"2xx\"}"))
        .and_then(|l| l.rsplit(' ').next())
        .map_or(0, |n| n.trim().parse().unwrap())
}

/// rclone with `--webdav-vendor owncloud` (and `nextcloud`'s and `fastmail`'s `X-OC-Mtime`,
/// which this rclone's owncloud vendor sends the same way): `copy` keeps the source's times
/// (`lsl` lists them), `check` agrees, a second `sync` uploads nothing.
fn rclone_keeps_times_at(addr: SocketAddr) {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    for i in 0..30u64 {
        let p = src.join(format!("d{}/f{i}", i % 3));
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, format!("file {i}").repeat(i as usize + 1)).unwrap();
        // Whole seconds, years back: what the server keeps must be these, not its clock.
        let t = UNIX_EPOCH + Duration::from_secs(1_000_000_000 + i * 86_400);
        std::fs::File::options()
            .write(true)
            .open(&p)
            .unwrap()
            .set_modified(t)
            .unwrap();
    }
    let url = format!("http://{addr}/dav/");
    let rclone = |args: &[&str]| {
        let out = Command::new("rclone")
            .args(args)
            .env("RCLONE_CONFIG", "/dev/null")
            .env("RCLONE_CONFIG_W_TYPE", "webdav")
            .env("RCLONE_CONFIG_W_URL", &url)
            .env("RCLONE_CONFIG_W_VENDOR", "owncloud")
            .env("RCLONE_CONFIG_W_BEARER_TOKEN", TOKEN)
            .env("TZ", "UTC")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "rclone {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        (
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let s = src.to_str().unwrap();
    rclone(&["copy", s, "w:tree"]);
    let sorted = |text: String| {
        let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
        lines.sort();
        lines
    };
    let local = sorted(rclone(&["lsl", s]).0);
    let remote = sorted(rclone(&["lsl", "w:tree"]).0);
    assert_eq!(local.len(), 30);
    assert_eq!(remote, local, "the server lists the source's times");
    rclone(&["check", s, "w:tree"]);
    let before = puts(addr);
    assert!(before >= 30, "{before} PUTs");
    let (_, log) = rclone(&["sync", "-v", s, "w:tree"]);
    assert!(!log.contains("Copied"), "the second sync copied:\n{log}");
    // More requests after the sync's: its last answers are counted by the time they are.
    rclone(&["lsl", "w:tree"]);
    assert_eq!(puts(addr), before, "the second sync sent PUTs:\n{log}");
    // A changed file is sent again, with its new time.
    let changed = src.join("d1/f1");
    std::fs::write(&changed, "changed").unwrap();
    let t = UNIX_EPOCH + Duration::from_secs(1_500_000_000);
    let f = std::fs::File::options().write(true).open(&changed).unwrap();
    f.set_modified(t).unwrap();
    drop(f);
    rclone(&["sync", s, "w:tree"]);
    assert_eq!(
        sorted(rclone(&["lsl", "w:tree"]).0),
        sorted(rclone(&["lsl", s]).0)
    );
    rclone(&["check", "--download", s, "w:tree"]);
}

#[test]
fn rclone_owncloud_vendor_keeps_modification_times() {
    if !tools::require(
        "rclone",
        tools::on_path("rclone").is_some(),
        "apt-get install rclone",
    ) {
        return;
    }
    let server = start(&["--token", TOKEN]);
    rclone_keeps_times_at(server.addr);
    let t = std::fs::metadata(server.root.join("tree/d1/f1"))
        .unwrap()
        .modified()
        .unwrap();
    assert_eq!(
        t.duration_since(UNIX_EPOCH).unwrap().as_secs(),
        1_500_000_000
    );
}

#[cfg(feature = "s3")]
#[test]
fn rclone_owncloud_vendor_keeps_modification_times_on_s3() {
    if !tools::require(
        "rclone",
        tools::on_path("rclone").is_some(),
        "apt-get install rclone",
    ) {
        return;
    }
    let Some(weed) = s3_nodes::start_weed() else {
        return;
    };
    let store = format!("s3://{}/times", weir_testkit::seaweed::BUCKET);
    let node = s3_nodes::start_node(&weed, &store, &["--token", TOKEN]);
    rclone_keeps_times_at(node.addr);
}

/// A request with `auth` (an `Authorization` line) instead of the default token.
fn request_as(addr: SocketAddr, auth: &str, head: &str, body: &str) -> (u16, String, String) {
    let head = head.replace('\n', "\r\n");
    raw(
        addr,
        &format!(
            "{head}Host: {addr}\r\n{auth}\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        ),
    )
}

/// A lock is its principal's (the name of the token that took it): another token that
/// presents the lock token (which `lockdiscovery` shows every reader) neither writes through
/// it, nor refreshes it, nor removes it; the holder does all three.
#[test]
fn a_lock_is_its_tokens_alone() {
    let dir = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("tokens");
    std::fs::write(
        &tokens,
        "alice-secret read,write,delete name=alice\nbob-secret read,write,delete name=bob\n",
    )
    .unwrap();
    let server = start(&["--token-file", tokens.to_str().unwrap()]);
    let a = server.addr;
    let alice = "Authorization: Bearer alice-secret";
    // Basic, as file managers send it: bob:bob-secret.
    let bob = "Authorization: Basic Ym9iOmJvYi1zZWNyZXQ=";
    assert_eq!(request_as(a, alice, "PUT /dav/f HTTP/1.1\n", "v1").0, 201);
    let lockinfo = "<?xml version=\"1.0\"?><D:lockinfo xmlns:D=\"DAV:\"><D:lockscope>\
                    <D:exclusive/></D:lockscope><D:locktype><D:write/></D:locktype>\
                    <D:owner>alice</D:owner></D:lockinfo>";
    let (status, head, _) = request_as(a, alice, "LOCK /dav/f HTTP/1.1\nDepth: 0\n", lockinfo);
    assert_eq!(status, 200, "{head}");
    let token = head
        .lines()
        .find_map(|l| l.strip_prefix("lock-token: "))
        .expect("Lock-Token")
        .trim()
        .trim_matches(['<', '>'])
        .to_owned();
    // Bob reads the token as any reader can.
    let (status, _, listing) = request_as(a, bob, "PROPFIND /dav/f HTTP/1.1\nDepth: 0\n", "");
    assert_eq!(status, 207);
    assert!(listing.contains(&token), "{listing}");
    let with_token = format!("PUT /dav/f HTTP/1.1\nIf: (<{token}>)\n");
    assert_eq!(request_as(a, bob, &with_token, "bob's").0, 423);
    assert_eq!(request_as(a, bob, "PUT /dav/f HTTP/1.1\n", "bob's").0, 423);
    let delete = format!("DELETE /dav/f HTTP/1.1\nIf: (<{token}>)\n");
    assert_eq!(request_as(a, bob, &delete, "").0, 423);
    let refresh = format!("LOCK /dav/f HTTP/1.1\nIf: (<{token}>)\n");
    assert_eq!(request_as(a, bob, &refresh, "").0, 412);
    let unlock = format!("UNLOCK /dav/f HTTP/1.1\nLock-Token: <{token}>\n");
    assert_eq!(request_as(a, bob, &unlock, "").0, 403);
    assert_eq!(std::fs::read(server.root.join("f")).unwrap(), b"v1");
    // The holder writes, refreshes and unlocks.
    assert_eq!(request_as(a, alice, &with_token, "v2").0, 200);
    assert_eq!(request_as(a, alice, &refresh, "").0, 200);
    assert_eq!(request_as(a, alice, &unlock, "").0, 204);
    assert_eq!(request_as(a, bob, "PUT /dav/f HTTP/1.1\n", "bob's").0, 200);
    assert_eq!(std::fs::read(server.root.join("f")).unwrap(), b"bob's");
}

/// The `Lock-Token` of a `LOCK`'s answer head, without its angle brackets.
fn lock_token(head: &str) -> String {
    head.lines()
        .find_map(|l| l.strip_prefix("lock-token: "))
        .expect("Lock-Token")
        .trim()
        .trim_matches(['<', '>'])
        .to_owned()
}

/// A `lockinfo` for an exclusive write lock owned by `owner` (an href, as Windows and macOS
/// write it).
fn lockinfo(owner: &str) -> String {
    format!(
        "<?xml version=\"1.0\" encoding=\"utf-8\" ?><D:lockinfo xmlns:D=\"DAV:\"><D:lockscope>\
         <D:exclusive/></D:lockscope><D:locktype><D:write/></D:locktype><D:owner><D:href>{owner}\
         </D:href></D:owner></D:lockinfo>"
    )
}

/// What Windows' mini-redirector (Explorer, "Map network drive") sends to map the folder and
/// copy a file into it, replayed: `OPTIONS /` (the server's root, whatever was mapped), a
/// `PROPFIND` of `/dav` without its slash (first without credentials, then with Basic; a `301`
/// here would stop it), the folder's listing with Windows' own properties, then the copy: an
/// empty `PUT`, `LOCK`, the bytes with the lock token, a `PROPPATCH` of the `Win32*` times and
/// attributes (`Win32LastModifiedTime` becomes the file's time, the others dead properties),
/// `UNLOCK`, and the file's properties read back.
#[test]
fn windows_explorer_maps_the_folder_and_copies_a_file() {
    let server = start(&["--token", TOKEN]);
    windows_explorer_copies_at(server.addr, Some(&server.root));
}

#[cfg(feature = "s3")]
#[test]
fn windows_explorer_maps_the_folder_and_copies_a_file_on_s3() {
    let Some(weed) = s3_nodes::start_weed() else {
        return;
    };
    let store = format!("s3://{}/windows", weir_testkit::seaweed::BUCKET);
    let node = s3_nodes::start_node(&weed, &store, &["--token", TOKEN]);
    windows_explorer_copies_at(node.addr, None);
}

/// The Windows replay against the server at `a`; `root`: the local store's, to look at the
/// file itself.
fn windows_explorer_copies_at(a: SocketAddr, root: Option<&Path>) {
    // `WIN\alice` with the token as the password.
    let basic = "Authorization: Basic V0lOXGFsaWNlOnMzY3JldA==";
    let (status, head, _) = raw(
        a,
        &format!("OPTIONS / HTTP/1.1\r\nHost: {a}\r\nConnection: close\r\nTranslate: f\r\n\r\n"),
    );
    let lower = head.to_ascii_lowercase();
    assert_eq!(status, 200, "{head}");
    assert!(lower.contains("\r\nms-author-via: dav"), "{head}");
    assert!(lower.contains("\r\ndav: 1, 2"), "{head}");
    let (status, head, _) = raw(
        a,
        &format!(
            "PROPFIND /dav HTTP/1.1\r\nHost: {a}\r\nDepth: 0\r\nConnection: close\r\n\
             Content-Length: 0\r\n\r\n"
        ),
    );
    assert_eq!(status, 401);
    assert!(
        head.contains("www-authenticate: Basic realm=\"weir\""),
        "{head}"
    );
    let (status, _, body) = request_as(a, basic, "PROPFIND /dav HTTP/1.1\nDepth: 0\n", "");
    assert_eq!(status, 207, "{body}");
    assert!(body.contains("<D:href>/dav/</D:href>") && body.contains("<D:collection/>"));
    let win32 = "<?xml version=\"1.0\" encoding=\"utf-8\" ?><D:propfind xmlns:D=\"DAV:\">\
                 <D:prop xmlns:Z=\"urn:schemas-microsoft-com:\"><D:getcontentlength/>\
                 <D:getlastmodified/><D:resourcetype/><Z:Win32CreationTime/>\
                 <Z:Win32LastAccessTime/><Z:Win32LastModifiedTime/><Z:Win32FileAttributes/>\
                 </D:prop></D:propfind>";
    let (status, _, body) = request_as(a, basic, "PROPFIND /dav/ HTTP/1.1\nDepth: 1\n", win32);
    assert_eq!(status, 207, "{body}");
    let probe = "PROPFIND /dav/report.txt HTTP/1.1\nDepth: 0\n";
    assert_eq!(request_as(a, basic, probe, win32).0, 404);
    // The copy.
    assert_eq!(
        request_as(a, basic, "PUT /dav/report.txt HTTP/1.1\n", "").0,
        201
    );
    let (status, head, _) = request_as(
        a,
        basic,
        "LOCK /dav/report.txt HTTP/1.1\nTimeout: Second-3600\n",
        &lockinfo("WIN\\alice"),
    );
    assert_eq!(status, 200, "{head}");
    let token = lock_token(&head);
    let put = format!("PUT /dav/report.txt HTTP/1.1\nIf: (<{token}>)\n");
    assert_eq!(request_as(a, basic, &put, "quarterly numbers").0, 200);
    let times = "<?xml version=\"1.0\" encoding=\"utf-8\" ?><D:propertyupdate xmlns:D=\"DAV:\" \
                 xmlns:Z=\"urn:schemas-microsoft-com:\"><D:set><D:prop>\
                 <Z:Win32CreationTime>Mon, 01 Jan 2024 10:00:00 GMT</Z:Win32CreationTime>\
                 <Z:Win32LastAccessTime>Tue, 02 Jan 2024 10:00:00 GMT</Z:Win32LastAccessTime>\
                 <Z:Win32LastModifiedTime>Tue, 02 Jan 2024 10:00:00 GMT</Z:Win32LastModifiedTime>\
                 <Z:Win32FileAttributes>00000020</Z:Win32FileAttributes>\
                 </D:prop></D:set></D:propertyupdate>";
    let proppatch = format!("PROPPATCH /dav/report.txt HTTP/1.1\nIf: (<{token}>)\n");
    let (status, _, body) = request_as(a, basic, &proppatch, times);
    assert_eq!(status, 207, "{body}");
    assert_eq!(body.matches("HTTP/1.1 200 OK").count(), 1, "{body}");
    assert!(!body.contains("HTTP/1.1 4"), "{body}");
    let unlock = format!("UNLOCK /dav/report.txt HTTP/1.1\nLock-Token: <{token}>\n");
    assert_eq!(request_as(a, basic, &unlock, "").0, 204);
    let (status, _, body) = request_as(a, basic, probe, win32);
    assert_eq!(status, 207, "{body}");
    assert!(
        body.contains("<D:getcontentlength>17</D:getcontentlength>"),
        "{body}"
    );
    assert!(body.contains("00000020"), "{body}");
    // The file's own time is the one Windows set, for every client: `getlastmodified`,
    // `Last-Modified`, and the file itself on the local store.
    assert!(
        body.contains("<D:getlastmodified>Tue, 02 Jan 2024 10:00:00 GMT</D:getlastmodified>"),
        "{body}"
    );
    let (status, head, body) = request_as(
        a,
        basic,
        "GET /dav/report.txt HTTP/1.1
",
        "",
    );
    assert_eq!((status, body.as_str()), (200, "quarterly numbers"));
    assert!(
        head.to_ascii_lowercase()
            .contains("\r\nlast-modified: tue, 02 jan 2024 10:00:00 gmt"),
        "{head}"
    );
    if let Some(root) = root {
        let file = root.join("report.txt");
        assert_eq!(std::fs::read(&file).unwrap(), b"quarterly numbers");
        // Its whole second (the fraction marks a client's time: `version_date.rs`).
        let modified = std::fs::metadata(&file).unwrap().modified().unwrap();
        let secs = modified.duration_since(std::time::UNIX_EPOCH).unwrap();
        assert_eq!(secs.as_secs(), 1_704_189_600);
    }
}

/// What macOS Finder sends to copy a file into a mounted folder, replayed: the folder's
/// properties, a probe of the file and of its AppleDouble `._` companion (`404`), an empty
/// `PUT`, `LOCK`, the bytes as a chunked `PUT` with `X-Expected-Entity-Length` and the lock
/// token, the `._` file the same way, `UNLOCK`, and a `.DS_Store`. weir stores `._*` and
/// `.DS_Store` as any file (they hold Finder's metadata; `OPERATING.md` says how to stop
/// them), so the listing shows all three.
#[test]
fn macos_finder_copies_a_file_with_its_appledouble() {
    let server = start(&["--token", TOKEN]);
    let a = server.addr;
    let basic = "Authorization: Basic YWxpY2U6czNjcmV0"; // alice:s3cret
    let finder = "<?xml version=\"1.0\" encoding=\"utf-8\"?><D:propfind xmlns:D=\"DAV:\">\
                  <D:prop><D:getlastmodified/><D:getcontentlength/><D:creationdate/>\
                  <D:resourcetype/></D:prop></D:propfind>";
    assert_eq!(request_as(a, basic, "OPTIONS /dav/ HTTP/1.1\n", "").0, 200);
    for depth in ["0", "1"] {
        let head = format!("PROPFIND /dav/ HTTP/1.1\nDepth: {depth}\n");
        assert_eq!(request_as(a, basic, &head, finder).0, 207);
    }
    for probe in ["hello.txt", "._hello.txt"] {
        let head = format!("PROPFIND /dav/{probe} HTTP/1.1\nDepth: 0\n");
        assert_eq!(request_as(a, basic, &head, finder).0, 404, "{probe}");
    }
    let chunked_put = |path: &str, token: &str, chunks: &[&[u8]]| {
        let len: usize = chunks.iter().map(|c| c.len()).sum();
        let mut req = format!(
            "PUT /dav/{path} HTTP/1.1\r\nHost: {a}\r\n{basic}\r\nConnection: close\r\n\
             If: (<{token}>)\r\nTransfer-Encoding: chunked\r\n\
             X-Expected-Entity-Length: {len}\r\n\r\n"
        );
        for c in chunks {
            req.push_str(&format!(
                "{:x}\r\n{}\r\n",
                c.len(),
                String::from_utf8_lossy(c)
            ));
        }
        req.push_str("0\r\n\r\n");
        raw(a, &req).0
    };
    let appledouble = "A".repeat(4096);
    for (path, chunks) in [
        ("hello.txt", vec![&b"hello "[..], b"from ", b"Finder"]),
        ("._hello.txt", vec![appledouble.as_bytes()]),
    ] {
        let empty = format!("PUT /dav/{path} HTTP/1.1\n");
        assert_eq!(request_as(a, basic, &empty, "").0, 201, "{path}");
        let lock = format!("LOCK /dav/{path} HTTP/1.1\nDepth: 0\nTimeout: Second-600\n");
        let (status, head, _) = request_as(
            a,
            basic,
            &lock,
            &lockinfo("http://www.apple.com/webdav_fs/"),
        );
        assert_eq!(status, 200, "{head}");
        let token = lock_token(&head);
        assert_eq!(chunked_put(path, &token, &chunks), 200, "{path}");
        let unlock = format!("UNLOCK /dav/{path} HTTP/1.1\nLock-Token: <{token}>\n");
        assert_eq!(request_as(a, basic, &unlock, "").0, 204, "{path}");
    }
    assert_eq!(
        request_as(a, basic, "PUT /dav/.DS_Store HTTP/1.1\n", "Bud1").0,
        201
    );
    let (status, _, body) = request_as(a, basic, "PROPFIND /dav/ HTTP/1.1\nDepth: 1\n", finder);
    assert_eq!(status, 207);
    for href in ["/dav/hello.txt", "/dav/._hello.txt", "/dav/.DS_Store"] {
        assert!(
            body.contains(&format!("<D:href>{href}</D:href>")),
            "{href}: {body}"
        );
    }
    assert_eq!(
        std::fs::read(server.root.join("hello.txt")).unwrap(),
        b"hello from Finder"
    );
    assert_eq!(
        std::fs::read(server.root.join("._hello.txt"))
            .unwrap()
            .len(),
        4096
    );
}

/// cadaver (Debian package), driven command by command on its standard input: each command's
/// output is read up to its next prompt.
struct Cadaver {
    child: Child,
    stdin: std::process::ChildStdin,
    output: std::sync::mpsc::Receiver<Vec<u8>>,
    _home: tempfile::TempDir,
}

/// cadaver's prompt once it is in `/dav/`.
const PROMPT: &str = "dav:/dav/> ";

impl Cadaver {
    /// cadaver on `http://addr/dav/`, with the token as the password of its `.netrc` (it
    /// answers the `401` with Basic from it).
    fn start(addr: SocketAddr) -> Cadaver {
        let home = tempfile::tempdir().unwrap();
        let netrc = home.path().join(".netrc");
        std::fs::write(
            &netrc,
            format!("machine 127.0.0.1 login me password {TOKEN}\n"),
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&netrc, std::fs::Permissions::from_mode(0o600)).unwrap();
        let mut child = Command::new("cadaver")
            .arg(format!("http://{addr}/dav/"))
            .env("HOME", home.path())
            .current_dir(home.path())
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let mut stdout = child.stdout.take().unwrap();
        let (tx, output) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = stdout.read(&mut buf) {
                if n == 0 || tx.send(buf[..n].to_vec()).is_err() {
                    break;
                }
            }
        });
        let mut cadaver = Cadaver {
            child,
            stdin,
            output,
            _home: home,
        };
        cadaver.until_prompt();
        cadaver
    }

    /// Output up to the next prompt (cadaver's end: a failure naming what was read). The
    /// 60 s bound only turns a cadaver waiting for input it will never get (a password
    /// prompt) into a failure with its output, rather than a hung test.
    fn until_prompt(&mut self) -> String {
        let mut text = String::new();
        while !text.ends_with(PROMPT) {
            match self.output.recv_timeout(Duration::from_secs(60)) {
                Ok(bytes) => text.push_str(&String::from_utf8_lossy(&bytes)),
                Err(e) => panic!("cadaver: {e}: {text}"),
            }
        }
        text
    }

    /// Runs `command`; its output.
    fn run(&mut self, command: &str) -> String {
        writeln!(self.stdin, "{command}").unwrap();
        self.until_prompt()
    }

    /// A file of the session's home (its working directory) holding `bytes`, for `put`.
    fn local(&self, name: &str, bytes: &str) -> String {
        std::fs::write(self._home.path().join(name), bytes).unwrap();
        name.to_owned()
    }
}

impl Drop for Cadaver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A lock flow through cadaver, with another client beside it: cadaver locks a file and a
/// folder, another client's writes there are `423`, cadaver's own (its lock token in `If:`)
/// go through, `discover` shows the locks as weir reports them, and after `unlock` the other
/// client writes again.
#[test]
fn cadaver_lock_flow() {
    if !tools::require(
        "cadaver",
        tools::on_path("cadaver").is_some(),
        "apt-get install cadaver",
    ) {
        return;
    }
    let server = start(&["--token", TOKEN]);
    let a = server.addr;
    let mut dav = Cadaver::start(a);
    let one = dav.local("one.txt", "one");
    let two = dav.local("two.txt", "two");
    let out = dav.run(&format!("put {one} f"));
    assert!(out.contains("succeeded"), "{out}");
    let out = dav.run("lock f");
    assert!(out.contains("Locking `f': succeeded"), "{out}");
    let out = dav.run("discover f");
    assert!(out.contains("Scope: exclusive  Type: write"), "{out}");
    assert!(out.contains("Lock token <opaquelocktoken:"), "{out}");
    // Another client, with the same write token but not the lock's token.
    assert_eq!(request(a, "PUT /dav/f HTTP/1.1\n", "other").0, 423);
    assert_eq!(request(a, "DELETE /dav/f HTTP/1.1\n", "").0, 423);
    let out = dav.run(&format!("put {two} f"));
    assert!(out.contains("succeeded"), "{out}");
    assert_eq!(std::fs::read(server.root.join("f")).unwrap(), b"two");
    // A folder locked with everything in it.
    let out = dav.run("mkcol d");
    assert!(out.contains("succeeded"), "{out}");
    let out = dav.run("lock d");
    assert!(out.contains("succeeded"), "{out}");
    assert_eq!(request(a, "PUT /dav/d/x HTTP/1.1\n", "other").0, 423);
    assert_eq!(request(a, "MKCOL /dav/d/sub HTTP/1.1\n", "").0, 423);
    let out = dav.run("unlock d");
    assert!(out.contains("succeeded"), "{out}");
    let out = dav.run("unlock f");
    assert!(out.contains("Unlocking `f': succeeded"), "{out}");
    assert_eq!(request(a, "PUT /dav/f HTTP/1.1\n", "other").0, 200);
    assert_eq!(request(a, "PUT /dav/d/x HTTP/1.1\n", "other").0, 201);
    let out = dav.run("ls d");
    assert!(out.contains("x"), "{out}");
}
