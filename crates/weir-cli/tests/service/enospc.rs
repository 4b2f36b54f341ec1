//! A full disk is `507`, the temporary is removed and existing files are untouched: on a real
//! tiny tmpfs when mounting is permitted (root), and everywhere through weir-store's fault
//! injection, with the service running in-process.

use crate::support::*;
use std::process::Command;

/// A tmpfs mounted on a temporary directory, unmounted on drop.
struct Tmpfs(tempfile::TempDir);

impl Tmpfs {
    fn mount(size: &str) -> Option<Tmpfs> {
        let dir = tempfile::tempdir().ok()?;
        let out = Command::new("mount")
            .args([
                "-t",
                "tmpfs",
                "-o",
                &format!("size={size},mode=0700"),
                "weir-cli-test",
            ])
            .arg(dir.path())
            .output()
            .ok()?;
        if !out.status.success() {
            eprintln!(
                "tmpfs ENOSPC test not run: cannot mount ({}); the fault-injection test covers it",
                String::from_utf8_lossy(&out.stderr).trim()
            );
            return None;
        }
        Some(Tmpfs(dir))
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(self.0.path()).status();
    }
}

#[test]
fn a_full_tmpfs_is_507_for_both_data_paths() {
    let Some(fs) = Tmpfs::mount("4m") else {
        return;
    };
    for (i, args) in [&[][..], &["--no-hash"][..]].into_iter().enumerate() {
        let root = fs.0.path().join(format!("root{i}"));
        let dir = tempfile::tempdir().unwrap();
        let s = Server::start_at(dir, root, args);
        let keep = data(512 << 10, 60);
        assert_eq!(s.request("PUT /files/keep HTTP/1.1", &keep).status, 201);
        // Chunked: no length to reserve, the disk fills during the writes.
        let big = s.dir.path().join("big");
        std::fs::write(&big, data(8 << 20, 61)).unwrap();
        let (status, body) = curl_status(&[
            "-T",
            big.to_str().unwrap(),
            "-H",
            "transfer-encoding: chunked",
            &s.url("/files/keep"),
        ]);
        assert_eq!(status, 507, "{args:?}: {}", String::from_utf8_lossy(&body));
        // With a length (splice path for --no-hash): the length is reserved before the body is
        // read, so the 507 comes instead of `100 Continue` and curl sends none of the body.
        let (status, out) = curl_status(&[
            "-T",
            big.to_str().unwrap(),
            "-H",
            "expect: 100-continue",
            "-w",
            "\n%{size_upload}\n%{http_code}",
            &s.url("/files/other"),
        ]);
        assert_eq!(status, 507, "{args:?}");
        let sent = String::from_utf8_lossy(&out);
        assert_eq!(sent.lines().last(), Some("0"), "{args:?}: {sent}");
        assert!(s.temps().is_empty(), "{args:?}: {:?}", s.temps());
        assert_eq!(s.request("GET /files/keep HTTP/1.1", b"").body, keep);
        assert_eq!(s.request("GET /files/other HTTP/1.1", b"").status, 404);
        // The space came back: a small upload fits again. (tmpfs may free a removed file's
        // pages a moment after its last close, so 507 is retried for up to 2 s.)
        let mut status = 0;
        for _ in 0..200 {
            status = s.request("PUT /files/small HTTP/1.1", b"fits").status;
            if status != 507 {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert_eq!(status, 201, "{args:?}");
    }
}

#[test]
fn injected_enospc_is_507_in_process() {
    use weir_store::{Fault, FaultOp, LocalOptions};

    let s = InProcessServe::start(LocalOptions {
        // Writes 1..=4 make the first file (four 512 KiB reads at most); a later one fails.
        fault: Some(Fault {
            op: FaultOp::Write,
            nth: 40,
            raw_os_error: 28, // ENOSPC
        }),
        ..LocalOptions::default()
    });
    let (addr, root) = (s.addr, s.root.clone());
    let keep = data(100_000, 62);
    assert_eq!(request(addr, "PUT /files/keep HTTP/1.1", &keep).status, 201);
    // Enough writes to reach the 40th, whatever the read sizes.
    let r = request(addr, "PUT /files/keep HTTP/1.1", &data(64 << 20, 63));
    assert_eq!(r.status, 507, "{}", r.text());
    assert!(r.text().contains("no space"), "{}", r.text());
    assert!(temps(&root).is_empty());
    assert_eq!(request(addr, "GET /files/keep HTTP/1.1", b"").body, keep);
    s.stop();
}
