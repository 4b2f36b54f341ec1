//! The local upload: `weir put` over the Unix socket passes its open file (`SCM_RIGHTS`) and
//! the server copies it (`serve/passed_file.rs`); what the server accepts as a passed file,
//! and the fallbacks (a server that refuses, TCP).

use crate::routes::b64;
use crate::support::*;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// A server with a Unix socket (and its access log in a file), and the socket's path.
fn unix_server(extra: &[&str]) -> (Server, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("weir.sock");
    let log = dir.path().join("access.log");
    let mut args = vec![
        "--unix",
        sock.to_str().unwrap(),
        "--access-log",
        log.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let s = Server::start(&args);
    // The socket's directory lives as long as the test: keep it beside the server's.
    std::mem::forget(dir);
    (s, sock, log)
}

/// The access log line of `path` that has a status (the last, if several: a request abandoned
/// before its body has none), once the log has been flushed.
fn log_line(log: &Path, path: &str) -> String {
    let mut line = String::new();
    wait_for("the access log line", || {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        let answered = |l: &&str| l.contains(&format!("path={path} ")) && !l.contains(" status=- ");
        match text.lines().rfind(answered) {
            Some(l) => {
                line = l.to_owned();
                true
            }
            None => false,
        }
    });
    line
}

fn put(sock: &Path, file: &Path, target: &str, extra: &[&str]) -> String {
    let url = format!("http://weir{target}");
    let mut args = vec!["put", "--unix", sock.to_str().unwrap()];
    args.extend_from_slice(extra);
    args.extend_from_slice(&[file.to_str().unwrap(), &url]);
    let out = weir(&args);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{err}");
    err
}

#[test]
fn weir_put_over_a_unix_socket_passes_the_file_and_no_byte_goes_through_the_socket() {
    let (s, sock, log) = unix_server(&[]);
    let file = s.dir.path().join("local.bin");
    let bytes = data(3 << 20, 61);
    std::fs::write(&file, &bytes).unwrap();
    let said = put(&sock, &file, "/files/local.bin", &[]);
    assert!(said.contains("the server copied the file itself"), "{said}");
    assert_eq!(std::fs::read(s.root.join("local.bin")).unwrap(), bytes);
    let line = log_line(&log, "/files/local.bin");
    // Counted by the server: not one body byte read from the socket, all of them stored,
    // and the SHA-256 is that of the stored copy.
    assert!(line.contains(" bytes_in=0 "), "{line}");
    assert!(
        line.contains(&format!(" stored={} ", bytes.len())),
        "{line}"
    );
    assert!(
        line.contains(&format!("sha256={}", sha256(&bytes))),
        "{line}"
    );
    assert!(s.temps().is_empty());

    // `--no-pass-file`: the same upload, streamed.
    let said = put(&sock, &file, "/files/streamed.bin", &["--no-pass-file"]);
    assert!(!said.contains("copied the file itself"), "{said}");
    let line = log_line(&log, "/files/streamed.bin");
    assert!(
        line.contains(&format!(" bytes_in={} ", bytes.len())),
        "{line}"
    );
    assert_eq!(std::fs::read(s.root.join("streamed.bin")).unwrap(), bytes);
}

#[test]
fn a_server_that_refuses_passed_files_gets_the_bytes() {
    let (s, sock, log) = unix_server(&["--no-passed-fds"]);
    let file = s.dir.path().join("f.bin");
    let bytes = data(1 << 20, 62);
    std::fs::write(&file, &bytes).unwrap();
    let said = put(&sock, &file, "/files/f.bin", &[]);
    assert!(!said.contains("copied the file itself"), "{said}");
    assert_eq!(std::fs::read(s.root.join("f.bin")).unwrap(), bytes);
    let line = log_line(&log, "/files/f.bin");
    assert!(
        line.contains(&format!(" bytes_in={} ", bytes.len())),
        "{line}"
    );
}

/// Python's standard library as the client: sends `head` on the Unix socket with the
/// descriptor that `opener` (Python code binding `fd`) makes, and prints the response.
fn send_fd(sock: &Path, head: &str, opener: &str) -> Resp {
    let script = format!(
        "import os, socket, sys\n\
         s = socket.socket(socket.AF_UNIX)\n\
         s.connect(sys.argv[1])\n\
         {opener}\n\
         socket.send_fds(s, [sys.argv[2].encode()], [fd])\n\
         s.settimeout(20)\n\
         out = b''\n\
         while True:\n\
         \x20   d = s.recv(65536)\n\
         \x20   if not d: break\n\
         \x20   out += d\n\
         sys.stdout.buffer.write(out)\n"
    );
    let out = Command::new("python3")
        .args(["-c", &script, sock.to_str().unwrap(), head])
        .output()
        .expect("python3");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    parse_response(&out.stdout)
}

fn head(target: &str, len: usize, expect: bool) -> String {
    let expect = if expect {
        "expect: 100-continue\r\n"
    } else {
        ""
    };
    format!(
        "PUT {target} HTTP/1.1\r\nhost: weir\r\ncontent-length: {len}\r\n{expect}weir-fd: 1\r\nweir-debug: 1\r\n\r\n"
    )
}

#[test]
fn a_passed_descriptor_must_be_a_regular_file_open_for_reading() {
    let (s, sock, _log) = unix_server(&[]);
    let file = s.dir.path().join("src.bin");
    std::fs::write(&file, data(100_000, 63)).unwrap();
    let cases = [
        (
            "r, w = os.pipe(); os.write(w, b'abc'); fd = r",
            3,
            "not a regular file",
        ),
        (
            "fd = os.open(sys.argv[1].rsplit('/', 1)[0], os.O_RDONLY)",
            3,
            "not a regular file",
        ),
        (
            &*format!("fd = os.open({:?}, os.O_WRONLY)", file.to_str().unwrap()),
            3,
            "not open for reading",
        ),
    ];
    for (i, (opener, len, why)) in cases.into_iter().enumerate() {
        let target = format!("/files/refused{i}");
        let resp = send_fd(&sock, &head(&target, len, true), opener);
        assert_eq!(resp.status, 400, "{opener}: {}", resp.text());
        assert!(resp.text().contains(why), "{opener}: {}", resp.text());
        assert!(!s.root.join(&target[7..]).exists());
    }
    // A passed file needs `Expect: 100-continue` (the client must not send the body).
    let opener = format!("fd = os.open({:?}, os.O_RDONLY)", file.to_str().unwrap());
    let resp = send_fd(&sock, &head("/files/no-expect", 3, false), &opener);
    assert_eq!(resp.status, 400, "{}", resp.text());
    assert!(
        resp.text().contains("Expect: 100-continue"),
        "{}",
        resp.text()
    );
    // A file shorter than the declared length: refused at commit, nothing stored.
    let resp = send_fd(&sock, &head("/files/short", 100_001, true), &opener);
    assert_eq!(resp.status, 400, "{}", resp.text());
    assert!(!s.root.join("short").exists());
    // A prefix of the file: exactly Content-Length bytes, and the answer says how they came.
    let resp = send_fd(&sock, &head("/files/prefix", 4096, true), &opener);
    assert_eq!(resp.status, 201, "{}", resp.text());
    let answer = resp.json();
    assert_eq!(answer["data_path"], "passed");
    assert_eq!(answer["body"]["direct"], 0);
    assert_eq!(answer["body"]["copied"], 0);
    let stored = std::fs::read(s.root.join("prefix")).unwrap();
    assert_eq!(stored, data(100_000, 63)[..4096]);
    assert_eq!(answer["sha256"], sha256(&stored));
    assert!(s.temps().is_empty());
}

#[test]
fn over_tcp_the_field_alone_changes_nothing() {
    // TCP cannot carry a descriptor: a request naming one is an ordinary upload (100 Continue,
    // then the body from the socket).
    let (s, _sock, _log) = unix_server(&[]);
    let bytes = data(200_000, 64);
    let resp = s.request("PUT /files/tcp HTTP/1.1\r\nweir-fd: 1", &bytes);
    assert_eq!(resp.status, 201, "{}", resp.text());
    assert_ne!(resp.json()["data_path"], "passed");
    assert_eq!(std::fs::read(s.root.join("tcp")).unwrap(), bytes);
}

/// On a filesystem with reflinks, `copy_file_range` shares the client's blocks: the stored
/// file's extents are those of the source, marked shared (FIEMAP, read with `filefrag -v`).
/// Needs root, `mkfs.btrfs` and a loop device: skipped (and said so) without them, unless
/// `WEIR_TEST_REFLINK=1` demands it.
#[test]
fn on_btrfs_the_stored_copy_shares_the_sources_extents() {
    let demanded = std::env::var("WEIR_TEST_REFLINK").is_ok_and(|v| v == "1");
    let root_user = rustix::process::geteuid().is_root();
    let mkfs = Command::new("mkfs.btrfs").arg("--version").output().is_ok();
    if !(root_user && mkfs) {
        assert!(
            !demanded,
            "WEIR_TEST_REFLINK=1 but no root or no mkfs.btrfs"
        );
        eprintln!("skipped: reflink test needs root and mkfs.btrfs");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let image = dir.path().join("btrfs.img");
    let mnt = dir.path().join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    std::fs::File::create(&image)
        .unwrap()
        .set_len(512 << 20)
        .unwrap();
    let ok = |cmd: &mut Command| cmd.output().is_ok_and(|o| o.status.success());
    if !ok(Command::new("mkfs.btrfs").arg("-q").arg(&image))
        || !ok(Command::new("mount")
            .arg("-o")
            .arg("loop")
            .arg(&image)
            .arg(&mnt))
    {
        assert!(
            !demanded,
            "WEIR_TEST_REFLINK=1 but the btrfs image cannot be made or mounted"
        );
        eprintln!("skipped: a btrfs loop image cannot be made or mounted here");
        return;
    }
    struct Unmount(PathBuf);
    impl Drop for Unmount {
        fn drop(&mut self) {
            let _ = Command::new("umount").arg(&self.0).status();
        }
    }
    let _unmount = Unmount(mnt.clone());
    let sock = mnt.join("weir.sock");
    let store = mnt.join("store");
    let (mut child, _) = spawn(&store, &mnt, &["--unix", sock.to_str().unwrap()], &[])
        .unwrap_or_else(|e| panic!("{e}"));
    let source = mnt.join("source.bin");
    let bytes = data(8 << 20, 65);
    std::fs::write(&source, &bytes).unwrap();
    let said = put(&sock, &source, "/files/copy.bin", &[]);
    let _ = child.kill();
    let _ = child.wait();
    assert!(said.contains("the server copied the file itself"), "{said}");
    let stored = store.join("copy.bin");
    assert_eq!(std::fs::read(&stored).unwrap(), bytes);
    let extents = |path: &Path| {
        let out = Command::new("filefrag")
            .arg("-v")
            .arg(path)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        // Extent lines: "   0:   0..  2047:   72960..  75007:   2048:   last,shared,eof".
        text.lines()
            .filter(|l| {
                l.trim_start()
                    .chars()
                    .next()
                    .is_some_and(|c| c.is_ascii_digit())
            })
            .map(|l| {
                let fields: Vec<&str> = l.split(':').map(str::trim).collect();
                (fields[2].to_owned(), l.contains("shared"))
            })
            .collect::<Vec<_>>()
    };
    let (theirs, ours) = (extents(&source), extents(&stored));
    assert!(
        !ours.is_empty(),
        "no extents listed for {}",
        stored.display()
    );
    assert_eq!(ours, theirs, "the copy's physical extents are the source's");
    assert!(ours.iter().all(|(_, shared)| *shared), "{ours:?}");
}

/// The passed file's hash runs beside its copy: the server reads the file into buffers, writes
/// each and hands it to a hashing thread while it reads the next (the streamed `PUT`'s
/// pipeline), so all but the first buffer are hashed there (`hashing.pipelined`), not read back
/// after the copy. Counted by the server, not timed. (Before, the copy was one
/// `copy_file_range` and the commit read the copy back: `hashing` was 0 and 0.)
#[test]
fn a_passed_file_is_hashed_beside_its_copy_and_verified_before_commit() {
    let (s, sock, _log) = unix_server(&[]);
    let file = s.dir.path().join("big.bin");
    let len = 24 << 20;
    let bytes = data(len, 66);
    std::fs::write(&file, &bytes).unwrap();
    let opener = format!("fd = os.open({:?}, os.O_RDONLY)", file.to_str().unwrap());
    let resp = send_fd(&sock, &head("/files/big.bin", len, true), &opener);
    assert_eq!(resp.status, 201, "{}", resp.text());
    let answer = resp.json();
    assert_eq!(answer["data_path"], "passed");
    let way = answer["passed_copy"].as_str().unwrap().to_owned();
    if way != "reflink" {
        // Not a reflinking filesystem (the test's temporary directory is usually not).
        assert_eq!(way, "pipelined", "{answer}");
        let inline = answer["hashing"]["inline"].as_u64().unwrap();
        let pipelined = answer["hashing"]["pipelined"].as_u64().unwrap();
        assert_eq!(inline + pipelined, len as u64, "{answer}");
        assert!(
            inline <= 512 << 10,
            "at most the first buffer inline: {answer}"
        );
    }
    assert_eq!(answer["sha256"], sha256(&bytes));
    assert_eq!(std::fs::read(s.root.join("big.bin")).unwrap(), bytes);

    // A Content-Digest that is not the file's: 400 at commit, nothing stored, no temporary.
    let mut wrong = bytes.clone();
    wrong[len / 2] ^= 1;
    let digest = b64(&Sha256::digest(&wrong));
    let with_digest = head("/files/wrong.bin", len, true).replacen(
        "weir-fd: 1\r\n",
        &format!("weir-fd: 1\r\ncontent-digest: sha-256=:{digest}:\r\n"),
        1,
    );
    let resp = send_fd(&sock, &with_digest, &opener);
    assert_eq!(resp.status, 400, "{}", resp.text());
    assert!(resp.text().contains("sha-256"), "{}", resp.text());
    assert!(!s.root.join("wrong.bin").exists());
    assert!(s.temps().is_empty());
    // The right one: stored.
    let digest = b64(&Sha256::digest(&bytes));
    let with_digest = head("/files/right.bin", len, true).replacen(
        "weir-fd: 1\r\n",
        &format!("weir-fd: 1\r\ncontent-digest: sha-256=:{digest}:\r\n"),
        1,
    );
    let resp = send_fd(&sock, &with_digest, &opener);
    assert_eq!(resp.status, 201, "{}", resp.text());
    assert_eq!(std::fs::read(s.root.join("right.bin")).unwrap(), bytes);
}

/// `weir put` passing its file hashes it beside the server's copy (not before the request) and
/// compares the server's SHA-256 of the stored copy with its own; it asks for that SHA-256
/// (`Weir-Fd-Hash`), so a `--no-hash` server computes it too.
#[test]
fn weir_put_hashes_beside_the_servers_copy_and_compares() {
    let (s, sock, log) = unix_server(&["--no-hash"]);
    let file = s.dir.path().join("local.bin");
    let bytes = data(5 << 20, 67);
    std::fs::write(&file, &bytes).unwrap();
    let said = put(&sock, &file, "/files/local.bin", &[]);
    assert!(said.contains("the server copied the file itself"), "{said}");
    assert!(said.contains("beside the server's copy"), "{said}");
    let line = log_line(&log, "/files/local.bin");
    assert!(line.contains(" bytes_in=0 "), "{line}");
    assert!(
        line.contains(&format!("sha256={}", sha256(&bytes))),
        "{line}"
    );
    // `--no-digest`: nothing hashed on either side (the reflink or the kernel's copy alone).
    let said = put(&sock, &file, "/files/nd.bin", &["--no-digest"]);
    assert!(said.contains("the server copied the file itself"), "{said}");
    assert!(!said.contains("hashed"), "{said}");
    assert_eq!(std::fs::read(s.root.join("nd.bin")).unwrap(), bytes);
}

/// The copy does not wait for the hash: with the store's hash jobs held at a gate (weir-store's
/// `HashGate`), the first piece of the passed file waits there to be hashed while the copy goes
/// on and writes the lane's other buffers (three 512 KiB buffers in all, then it waits for one
/// to be hashed). Seen in the temporary file's size and the gate's queue, not timed. On the old
/// code no hash job ever came (the copy was whole, then the commit read it back).
#[test]
fn the_copy_goes_on_while_its_first_piece_waits_for_its_hash() {
    use weir_store::HashGate;
    const BUFFER: u64 = 512 << 10;
    let gate = HashGate::closed();
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("weir.sock");
    let s = weir_testkit_serve(&gate, &sock);
    let file = dir.path().join("src.bin");
    let bytes = data(8 << 20, 68);
    std::fs::write(&file, &bytes).unwrap();
    // A prefix (one byte short): never a reflink, whatever the filesystem, so the pieces go
    // through the lane.
    let len = bytes.len() - 1;
    let opener = format!("fd = os.open({:?}, os.O_RDONLY)", file.to_str().unwrap());
    let head = head("/files/gated.bin", len, true);
    let client = std::thread::spawn({
        let sock = sock.clone();
        move || send_fd(&sock, &head, &opener)
    });
    let waiting = gate
        .wait_for_job(Duration::from_secs(60))
        .expect("a hash job of the passed file");
    assert_eq!(waiting, vec![BUFFER], "the first piece waits at the gate");
    let temp_size = || {
        temps(&s.root)
            .first()
            .and_then(|t| std::fs::metadata(t).ok())
            .map_or(0, |m| m.len())
    };
    wait_for("the copy to fill the lane's three buffers", || {
        temp_size() == 3 * BUFFER
    });
    // Copied past the piece whose hash has not run yet.
    assert_eq!(gate.waiting(), vec![BUFFER]);
    gate.open();
    let resp = client.join().unwrap();
    assert_eq!(resp.status, 201, "{}", resp.text());
    let answer = resp.json();
    assert_eq!(answer["passed_copy"], "pipelined");
    assert_eq!(answer["sha256"], sha256(&bytes[..len]));
    assert_eq!(
        std::fs::read(s.root.join("gated.bin")).unwrap(),
        bytes[..len]
    );
    s.stop();
}

/// `weir serve`'s handler in this process on the Unix socket `sock`, its store's hash jobs
/// held by `gate`.
fn weir_testkit_serve(gate: &weir_store::HashGate, sock: &Path) -> InProcessServe {
    InProcessServe::start_unix(
        weir_store::LocalOptions {
            hash_gate: Some(gate.clone()),
            ..weir_store::LocalOptions::default()
        },
        sock,
    )
}
