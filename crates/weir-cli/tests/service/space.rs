//! Space on a full disk or quota: a resumable upload whose append meets `--max-storage` or
//! `ENOSPC` keeps what it had recorded (both protocols), and a declared length that has not
//! arrived holds no space other uploads need.

use crate::routes::b64;
use crate::support::*;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

const MIB: usize = 1 << 20;
const T: &str = "\r\ntus-resumable: 1.0.0";
const OCTETS: &str = "\r\ncontent-type: application/offset+octet-stream";

/// A request on a new connection (`host: t`, `connection: close`, the body's length added
/// unless the head has one): its final response, past any interim `104`s.
fn request(addr: std::net::SocketAddr, head: &str, body: &[u8]) -> Resp {
    if head.starts_with("HEAD ") {
        return weir_testkit::h1::request(addr, head, body);
    }
    let mut sock = TcpStream::connect(addr).unwrap();
    sock.set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    let mut req = format!("{head}\r\nhost: t\r\nconnection: close\r\n");
    if !head.to_ascii_lowercase().contains("content-length") {
        req.push_str(&format!("content-length: {}\r\n", body.len()));
    }
    req.push_str("\r\n");
    sock.write_all(req.as_bytes()).unwrap();
    // The server may answer (507) and close before it read everything.
    let _ = sock.write_all(body);
    let mut raw = Vec::new();
    let _ = sock.read_to_end(&mut raw);
    let (mut all, _) = weir_testkit::h1::parse_responses(&raw);
    all.pop()
        .unwrap_or_else(|| panic!("no response: {:?}", String::from_utf8_lossy(&raw)))
}

fn data_file(root: &Path, id: &str) -> PathBuf {
    root.join(".weir-staging/resumable")
        .join(format!("{id}.data"))
}

fn len_on_disk(root: &Path, id: &str) -> Option<u64> {
    std::fs::metadata(data_file(root, id)).ok().map(|m| m.len())
}

fn ietf_patch(addr: std::net::SocketAddr, url: &str, offset: usize, body: &[u8]) -> Resp {
    request(
        addr,
        &format!(
            "PATCH {url} HTTP/1.1\r\ncontent-type: application/partial-upload\r\n\
             upload-offset: {offset}\r\nupload-complete: ?1"
        ),
        body,
    )
}

fn ietf_offset(addr: std::net::SocketAddr, url: &str) -> u64 {
    let r = request(addr, &format!("HEAD {url} HTTP/1.1"), b"");
    assert_eq!(r.status, 204, "{:?}", r.headers);
    r.header("upload-offset").unwrap().parse().unwrap()
}

fn tus_patch(addr: std::net::SocketAddr, url: &str, offset: usize, body: &[u8]) -> Resp {
    request(
        addr,
        &format!("PATCH {url} HTTP/1.1{T}{OCTETS}\r\nupload-offset: {offset}"),
        body,
    )
}

fn tus_offset(addr: std::net::SocketAddr, url: &str) -> u64 {
    let r = request(addr, &format!("HEAD {url} HTTP/1.1{T}"), b"");
    assert!(r.status == 200 || r.status == 204, "{:?}", r.headers);
    r.header("upload-offset").unwrap().parse().unwrap()
}

/// An IETF upload of `whole` created with its first `first` bytes: its URL and id.
fn ietf_create(addr: std::net::SocketAddr, path: &str, whole: &[u8], first: usize) -> String {
    let r = request(
        addr,
        &format!(
            "PUT /files/{path} HTTP/1.1\r\nupload-complete: ?0\r\nupload-length: {}",
            whole.len()
        ),
        &whole[..first],
    );
    assert_eq!(r.status, 201, "{:?}\n{}", r.headers, r.text());
    assert_eq!(r.header("upload-offset").unwrap(), first.to_string());
    r.header("location").unwrap().to_owned()
}

/// A tus upload of `whole` (to `name`) created with its first `first` bytes: its URL.
fn tus_create(addr: std::net::SocketAddr, name: &str, whole: &[u8], first: usize) -> String {
    // "filename" base64 of `name`, which the tests keep to [a-z.]{3} multiples.
    let meta = format!("filename {}", b64(name.as_bytes()));
    let r = request(
        addr,
        &format!(
            "POST /tus/ HTTP/1.1{T}\r\nupload-length: {}\r\nupload-metadata: {meta}{OCTETS}",
            whole.len()
        ),
        &whole[..first],
    );
    assert_eq!(r.status, 201, "{:?}\n{}", r.headers, r.text());
    assert_eq!(r.header("upload-offset").unwrap(), first.to_string());
    r.header("location").unwrap().to_owned()
}

/// The rule of a failed append, for either protocol: 507, then the offset reported is the one
/// recorded before and exactly the bytes in the data file; once space is freed, an append from
/// that offset completes the file, whose SHA-256 is the whole body's.
#[allow(clippy::too_many_arguments)]
fn failed_append_keeps_the_upload(
    addr: std::net::SocketAddr,
    root: &Path,
    url: &str,
    whole: &[u8],
    at: usize,
    patch: fn(std::net::SocketAddr, &str, usize, &[u8]) -> Resp,
    offset: fn(std::net::SocketAddr, &str) -> u64,
    free: &mut dyn FnMut(),
    stored: &str,
) {
    let id = url.rsplit('/').next().unwrap();
    let r = patch(addr, url, at, &whole[at..]);
    assert_eq!(r.status, 507, "{:?}\n{}", r.headers, r.text());
    let reported = offset(addr, url);
    assert_eq!(reported, at as u64, "the offset recorded before the append");
    assert_eq!(
        len_on_disk(root, id),
        Some(reported),
        "the offset reported is the bytes that exist"
    );
    free();
    let r = patch(addr, url, at, &whole[at..]);
    assert!(
        r.status == 201 || r.status == 204,
        "{} {:?}\n{}",
        r.status,
        r.headers,
        r.text()
    );
    let got = std::fs::read(root.join(stored)).unwrap();
    assert_eq!(got.len(), whole.len());
    assert_eq!(sha256(&got), sha256(whole));
}

#[test]
fn a_quota_filled_mid_append_keeps_the_resumable_upload_ietf_and_tus() {
    // 8 MiB: each upload is 5 MiB, 3 MiB of it stored first; then a 3 MiB file leaves no room
    // for the other 2 MiB.
    let s = Server::start(&["--max-storage", "8MiB"]);
    for tus in [false, true] {
        let whole = data(5 * MIB, 70 + u64::from(tus));
        let (url, stored) = if tus {
            (tus_create(s.addr, "tus.bin", &whole, 3 * MIB), "tus.bin")
        } else {
            (ietf_create(s.addr, "ietf.bin", &whole, 3 * MIB), "ietf.bin")
        };
        let other = data(3 * MIB, 72);
        let r = request(s.addr, "PUT /files/other/fill HTTP/1.1", &other);
        assert_eq!(r.status, 201, "{}", r.text());
        let mut free = || {
            let r = request(s.addr, "DELETE /files/other/fill HTTP/1.1", b"");
            assert_eq!(r.status, 204, "{}", r.text());
        };
        let (patch, offset): (fn(_, &_, _, &_) -> _, fn(_, &_) -> _) = if tus {
            (tus_patch, tus_offset)
        } else {
            (ietf_patch, ietf_offset)
        };
        let at = 3 * MIB;
        failed_append_keeps_the_upload(
            s.addr, &s.root, &url, &whole, at, patch, offset, &mut free, stored,
        );
        let r = request(s.addr, &format!("DELETE /files/{stored} HTTP/1.1"), b"");
        assert_eq!(r.status, 204, "{}", r.text());
    }
}

#[test]
fn an_enospc_mid_append_keeps_the_resumable_upload() {
    use weir_store::{Fault, FaultOp, LocalOptions};
    // The 40th write of body bytes fails, once: the creation's 100,000 bytes take a few
    // writes, the 30 MiB append at least 60 (of 512 KiB at most).
    let s = InProcessServe::start_resumable(LocalOptions {
        fault: Some(Fault {
            op: FaultOp::Write,
            nth: 40,
            raw_os_error: 28, // ENOSPC
        }),
        ..LocalOptions::default()
    });
    let at = 100_000;
    let whole = data(at + 30 * MIB, 73);
    let url = ietf_create(s.addr, "ietf.bin", &whole, at);
    let (patch, offset) = (ietf_patch, ietf_offset);
    let root = s.root.clone();
    failed_append_keeps_the_upload(
        s.addr,
        &root,
        &url,
        &whole,
        at,
        patch,
        offset,
        &mut || {},
        "ietf.bin",
    );
    // tus: the fault has fired; a quota-free store cannot fail its append the same way, so
    // its rule is the quota test's.
    s.stop();
}

/// A client that declared `declared` bytes in a `PUT`, sent 1 KiB, and then trickles 300
/// bytes a second (just above the default minimum body rate of 240): the attack of a declared
/// length held without its bytes. Stops (and drops the connection) when dropped.
struct Trickler {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Trickler {
    fn start(addr: std::net::SocketAddr, path: &str, declared: u64) -> Trickler {
        let mut sock = TcpStream::connect(addr).unwrap();
        let head = format!("PUT {path} HTTP/1.1\r\nhost: t\r\ncontent-length: {declared}\r\n\r\n");
        sock.write_all(head.as_bytes()).unwrap();
        sock.write_all(&[b'x'; 1024]).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = stop.clone();
        let thread = std::thread::spawn(move || {
            while !stopped.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(250));
                if sock.write_all(&[b'x'; 75]).is_err() {
                    return;
                }
            }
        });
        Trickler {
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for Trickler {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn wait_for_temps(root: &Path, n: usize) {
    wait_for("the slow uploads' temporaries", || temps(root).len() >= n);
    // Past `begin`: the reservation and the preallocation follow at once.
    std::thread::sleep(Duration::from_millis(300));
}

#[test]
fn a_declared_length_not_sent_holds_no_quota_other_uploads_need() {
    // 100 MB; two clients declare 45 MB each and send almost nothing; both data paths.
    for args in [&["--no-hash"][..], &[][..]] {
        let mut args = args.to_vec();
        args.extend(["--max-storage", "100MB"]);
        let s = Server::start(&args);
        let _a = Trickler::start(s.addr, "/files/slow-a", 45_000_000);
        let _b = Trickler::start(s.addr, "/files/slow-b", 45_000_000);
        wait_for_temps(&s.root, 2);
        let body = data(50_000_000, 74);
        let r = request(s.addr, "PUT /files/normal HTTP/1.1", &body);
        assert_eq!(r.status, 201, "{args:?}: {}", r.text());
        // A length that cannot fit is still refused before its body.
        let r = request(
            s.addr,
            "PUT /files/huge HTTP/1.1\r\ncontent-length: 60000000\r\nexpect: 100-continue",
            b"",
        );
        assert_eq!(r.status, 507, "{args:?}: {}", r.text());
    }
}

/// The same on a real small filesystem (a tmpfs, when mounting is permitted): the blocks of a
/// declared length are not all reserved (`fallocate`) before they arrive.
#[test]
fn a_declared_length_not_sent_holds_no_disk_other_uploads_need() {
    let Some(fs) = Tmpfs::mount("96m") else {
        return;
    };
    for args in [&["--no-hash"][..], &[][..]] {
        let root = fs.0.path().join("root");
        let dir = tempfile::tempdir().unwrap();
        let s = Server::start_at(dir, root.clone(), args);
        let _a = Trickler::start(s.addr, "/files/slow-a", 45_000_000);
        let _b = Trickler::start(s.addr, "/files/slow-b", 45_000_000);
        wait_for_temps(&root, 2);
        let body = data(40_000_000, 75);
        let r = request(s.addr, "PUT /files/normal HTTP/1.1", &body);
        assert_eq!(r.status, 201, "{args:?}: {}", r.text());
        // A declared length the filesystem cannot hold is still refused before its body.
        let r = request(
            s.addr,
            "PUT /files/huge HTTP/1.1\r\ncontent-length: 200000000\r\nexpect: 100-continue",
            b"",
        );
        assert_eq!(r.status, 507, "{args:?}: {}", r.text());
        drop((_a, _b));
        drop(s);
        std::fs::remove_dir_all(&root).unwrap();
    }
}

/// A tmpfs mounted on a temporary directory, unmounted on drop.
struct Tmpfs(tempfile::TempDir);

impl Tmpfs {
    fn mount(size: &str) -> Option<Tmpfs> {
        let dir = tempfile::tempdir().ok()?;
        let out = std::process::Command::new("mount")
            .args([
                "-t",
                "tmpfs",
                "-o",
                &format!("size={size},mode=0700"),
                "weir-space",
            ])
            .arg(dir.path())
            .output()
            .ok()?;
        if !out.status.success() {
            eprintln!(
                "tmpfs test not run: cannot mount ({}); the quota test covers the rule",
                String::from_utf8_lossy(&out.stderr).trim()
            );
            return None;
        }
        Some(Tmpfs(dir))
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg("-l")
            .arg(self.0.path())
            .status();
    }
}
