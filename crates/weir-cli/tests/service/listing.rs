//! Directory listings (issue 19, points 1 and 2): pages walk a directory exactly once, a client
//! that never reads holds one page of memory whatever the directory size, and scans run off the
//! async workers.

use super::support::*;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

/// Names of a listing answer.
fn names(json: &serde_json::Value) -> Vec<String> {
    json["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap().to_owned())
        .collect()
}

/// The target of a `Link: <target>; rel="next"` header.
fn next_link(r: &Resp) -> Option<String> {
    let link = r.header("link")?;
    assert!(link.ends_with("; rel=\"next\""), "{link}");
    Some(link[1..link.find('>').unwrap()].to_owned())
}

#[test]
fn pages_walk_a_directory_once_following_next() {
    let s = Server::start(&[]);
    let dir = s.root.join("d");
    std::fs::create_dir_all(&dir).unwrap();
    let mut all: Vec<String> = (0..25).map(|i| format!("f{i:02} é+&")).collect();
    for name in &all {
        std::fs::write(dir.join(name), name.as_bytes()).unwrap();
    }
    all.sort();

    // Small directories: one page as before, without `next` or a link.
    let r = s.request("GET /files/d/ HTTP/1.1", b"");
    assert_eq!(r.status, 200);
    let j = r.json();
    assert_eq!((names(&j), j.get("next")), (all.clone(), None));
    assert_eq!(j["path"], "d/");
    assert_eq!(r.header("link"), None);
    assert_eq!(
        r.header("content-length").unwrap(),
        r.body.len().to_string()
    );

    // Pages of 10 through the Link header, pages of 7 through the `next` field.
    let mut seen = Vec::new();
    let mut target = Some("/files/d/?limit=10".to_owned());
    let mut pages = 0;
    while let Some(t) = target {
        let r = s.request(&format!("GET {t} HTTP/1.1"), b"");
        assert_eq!(r.status, 200, "{}", r.text());
        let j = r.json();
        seen.extend(names(&j));
        pages += 1;
        target = next_link(&r);
        assert_eq!(target.is_some(), j.get("next").is_some(), "{j}");
    }
    assert_eq!((pages, &seen), (3, &all));

    seen.clear();
    let mut after: Option<String> = None;
    loop {
        let query = match &after {
            None => "limit=7".to_owned(),
            Some(a) => format!("limit=7&after={}", encode(a)),
        };
        let j = s
            .request(&format!("GET /files/d/?{query} HTTP/1.1"), b"")
            .json();
        let page = names(&j);
        assert!(page.len() <= 7);
        seen.extend(page);
        match j.get("next") {
            Some(n) => after = Some(n.as_str().unwrap().to_owned()),
            None => break,
        }
        // Between pages: one name behind the cursor, one ahead, and one ahead removed.
        if seen.len() == 7 {
            std::fs::write(dir.join("a-behind"), b"").unwrap();
            std::fs::write(dir.join("f15 ahead"), b"").unwrap();
            std::fs::remove_file(dir.join(&all[20])).unwrap();
        }
    }
    let mut want = all.clone();
    want.remove(20);
    want.push("f15 ahead".into());
    want.sort();
    assert_eq!(seen, want, "each name once, in order");

    // The root pages too.
    let j = s.request("GET /files/?limit=1 HTTP/1.1", b"").json();
    assert_eq!((names(&j), j.get("next")), (vec!["d".to_owned()], None));
}

#[test]
fn bad_page_parameters_are_400() {
    let s = Server::start(&[]);
    std::fs::create_dir_all(s.root.join("d")).unwrap();
    for query in [
        "limit=0",
        "limit=10001",
        "limit=abc",
        "limit=-5",
        "limit=",
        "limit=1&limit=2",
        "after=",
        "after=%zz",
        "after=%ff%fe",
        "after=a&after=b",
    ] {
        let r = s.request(&format!("GET /files/d/?{query} HTTP/1.1"), b"");
        assert_eq!(r.status, 400, "{query}: {}", r.text());
        assert!(r.json()["error"].as_str().is_some(), "{query}");
    }
    let long = "x".repeat(256);
    let r = s.request(&format!("GET /files/?after={long} HTTP/1.1"), b"");
    assert_eq!(r.status, 400);
    // The largest limit, and unknown parameters, are fine; a missing directory is still 404.
    let r = s.request("GET /files/d/?limit=10000&cache-buster=1 HTTP/1.1", b"");
    assert_eq!(r.status, 200);
    let r = s.request("GET /files/absent/?limit=5 HTTP/1.1", b"");
    assert_eq!(r.status, 404);
}

/// RFC 3986 unreserved characters stay, everything else is escaped.
fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                char::from(b).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// Clients that ask for the listing of a 50,000-file directory and never read it: before pages,
/// each waiting request held the whole listing (entries, a JSON tree and its text: tens of MiB
/// each, 1.8 GiB of RSS for these 20); now each holds one page of at most `DEFAULT_LIMIT`
/// entries (about 75 KiB of JSON here, 1.5 MiB for all 20). The bound leaves room for what the
/// allocator keeps in the arenas of the threads that ran the scans (up to 8 MiB each, see
/// `weir::malloc`) and for thread stacks, and is still a thirtieth of the old growth.
#[cfg(target_os = "linux")]
#[test]
fn stalled_readers_of_a_large_listing_hold_one_page_each() {
    const FILES: usize = 50_000;
    const CLIENTS: usize = 20;
    const BOUND_KIB: u64 = 64 << 10;
    let s = Server::start(&[]);
    let big = s.root.join("big");
    std::fs::create_dir(&big).unwrap();
    for i in 0..FILES {
        std::fs::File::create(big.join(format!("file-{i:06}.dat"))).unwrap();
    }
    assert_eq!(s.request("GET /healthz HTTP/1.1", b"").status, 200);
    let before = proc_status_kib(s.pid(), "VmRSS");

    let mut clients = Vec::new();
    for _ in 0..CLIENTS {
        let mut c = stalled_client(s.addr);
        c.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
        c.write_all(b"GET /files/big/ HTTP/1.1\r\nhost: test\r\n\r\n")
            .unwrap();
        clients.push(c);
    }
    // Each status line means the server has built that answer and is sending it; the rest is
    // never read.
    for c in &mut clients {
        let mut status = [0u8; 12];
        c.read_exact(&mut status).unwrap();
        assert_eq!(&status, b"HTTP/1.1 200");
    }
    let held = proc_status_kib(s.pid(), "VmRSS");
    let grew = held.saturating_sub(before);
    assert!(
        grew < BOUND_KIB,
        "RSS grew by {grew} KiB with {CLIENTS} stalled listings (from {before} KiB)"
    );
    drop(clients);
    assert_eq!(s.request("GET /healthz HTTP/1.1", b"").status, 200);
}

/// A connection whose receive buffer is the smallest the kernel allows, set before connecting
/// so that the window it advertises stays small: the kernel then takes little of an answer the
/// client does not read, and the rest stays with the server.
#[cfg(target_os = "linux")]
fn stalled_client(addr: std::net::SocketAddr) -> TcpStream {
    use rustix::net::{AddressFamily, SocketType, connect, socket, sockopt};
    let fd = socket(AddressFamily::INET, SocketType::STREAM, None).unwrap();
    sockopt::set_socket_recv_buffer_size(&fd, 1).unwrap();
    connect(&fd, &addr).unwrap();
    TcpStream::from(fd)
}

/// Listings whose scans are held at a gate, more of them than the runtime has worker threads:
/// `/healthz` is still answered, and the listings complete once released. Before, the scan ran
/// on an async worker, and with one scan held `/healthz` went unanswered on this two-worker
/// runtime.
#[test]
fn listings_in_progress_leave_the_async_workers_free() {
    /// Opens the gate however the test ends, so that a failure is a failure, not a hang of the
    /// server's threads at shutdown.
    struct OpenOnDrop(weir_store::HashGate);
    impl Drop for OpenOnDrop {
        fn drop(&mut self) {
            self.0.open();
        }
    }

    const LISTINGS: usize = 4;
    let gate = weir_store::HashGate::closed();
    let serve = InProcessServe::start(weir_store::LocalOptions {
        list_gate: Some(gate.clone()),
        ..weir_store::LocalOptions::default()
    });
    let _open = OpenOnDrop(gate.clone());
    std::fs::create_dir(serve.root.join("d")).unwrap();
    std::fs::write(serve.root.join("d/f"), b"x").unwrap();

    let addr = serve.addr;
    let listings: Vec<_> = (0..LISTINGS)
        .map(|_| std::thread::spawn(move || request(addr, "GET /files/d/ HTTP/1.1", b"")))
        .collect();
    wait_for("a listing held at the gate", || !gate.waiting().is_empty());
    let mut health = TcpStream::connect(addr).unwrap();
    // Only detects a hang: an answer takes milliseconds.
    health
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    health
        .write_all(b"GET /healthz HTTP/1.1\r\nhost: test\r\nconnection: close\r\n\r\n")
        .unwrap();
    let mut raw = Vec::new();
    let _ = health.read_to_end(&mut raw);
    assert!(
        raw.starts_with(b"HTTP/1.1 200"),
        "/healthz not answered while listings were in progress: {:?}",
        String::from_utf8_lossy(&raw)
    );
    assert!(
        !gate.waiting().is_empty(),
        "a listing was still held while /healthz was answered"
    );
    // Scans run in parallel up to the service's limit of one per core.
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    wait_for("scans held in parallel", || {
        gate.waiting().len() >= LISTINGS.min(cores)
    });
    assert!(gate.waiting().len() <= cores, "more scans than permits");

    gate.open();
    for listing in listings {
        let r = listing.join().unwrap();
        assert_eq!(r.status, 200);
        assert_eq!(names(&r.json()), ["f"]);
    }
    drop(_open);
    serve.stop();
}
