//! `weir put` resuming by itself (issue 13, point 7): through a TCP proxy in the test that cuts,
//! stalls or answers 503 on chosen connections, between the real `weir put` and `weir serve`.

use crate::support::*;
use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// What the proxy does with one connection.
#[derive(Clone, Copy, Debug)]
enum Behavior {
    Relay,
    /// Relays this many bytes from the client, then closes both sides.
    CutAfter(u64),
    /// Relays this many bytes from the client, then relays nothing more until
    /// [`Proxy::cut_all`]: what the client sends after is read and dropped, so that its writes
    /// never block on a full socket buffer and it goes on to read the server's interim answers
    /// (`weir put` sends the body without the `104` when it takes over a second to come, as on
    /// a loaded machine, and reads the `104` only once the body is written).
    StallAfter(u64),
    /// Reads the request head and answers `503` itself.
    Answer503,
    /// Closes the connection at once.
    Close,
}

struct Proxy {
    addr: SocketAddr,
    /// Every socket, to cut them all.
    sockets: Arc<Mutex<Vec<TcpStream>>>,
    /// Bytes relayed client → server, per connection.
    forwarded: Arc<Mutex<Vec<Arc<AtomicU64>>>>,
}

impl Proxy {
    /// A proxy to `server`; `behavior(n)` says what to do with the `n`th connection (from 0).
    fn start(server: SocketAddr, behavior: impl Fn(usize) -> Behavior + Send + 'static) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let sockets = Arc::new(Mutex::new(Vec::new()));
        let forwarded = Arc::new(Mutex::new(Vec::new()));
        let (sockets2, forwarded2) = (sockets.clone(), forwarded.clone());
        std::thread::spawn(move || {
            for (n, client) in listener.incoming().enumerate() {
                let Ok(client) = client else { return };
                let count = Arc::new(AtomicU64::new(0));
                forwarded2.lock().unwrap().push(count.clone());
                sockets2.lock().unwrap().push(client.try_clone().unwrap());
                let sockets = sockets2.clone();
                let behavior = behavior(n);
                std::thread::spawn(move || relay(client, server, behavior, count, sockets));
            }
        });
        Proxy {
            addr,
            sockets,
            forwarded,
        }
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    fn forwarded(&self, n: usize) -> u64 {
        self.forwarded
            .lock()
            .unwrap()
            .get(n)
            .map_or(0, |c| c.load(Ordering::SeqCst))
    }

    fn total_forwarded(&self) -> u64 {
        let all = self.forwarded.lock().unwrap();
        all.iter().map(|c| c.load(Ordering::SeqCst)).sum()
    }

    fn cut_all(&self) {
        for s in self.sockets.lock().unwrap().iter() {
            let _ = s.shutdown(Shutdown::Both);
        }
    }
}

fn relay(
    mut client: TcpStream,
    server: SocketAddr,
    behavior: Behavior,
    count: Arc<AtomicU64>,
    sockets: Arc<Mutex<Vec<TcpStream>>>,
) {
    match behavior {
        Behavior::Close => {
            let _ = client.shutdown(Shutdown::Both);
            return;
        }
        Behavior::Answer503 => {
            let mut head = Vec::new();
            let mut byte = [0u8; 1];
            while !head.ends_with(b"\r\n\r\n") && client.read(&mut byte).unwrap_or(0) == 1 {
                head.push(byte[0]);
            }
            let _ = client.write_all(
                b"HTTP/1.1 503 Service Unavailable\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
            );
            let _ = client.shutdown(Shutdown::Both);
            return;
        }
        _ => {}
    }
    let mut upstream = TcpStream::connect(server).unwrap();
    sockets.lock().unwrap().push(upstream.try_clone().unwrap());
    let (mut down_from, mut down_to) = (upstream.try_clone().unwrap(), client.try_clone().unwrap());
    std::thread::spawn(move || {
        let _ = std::io::copy(&mut down_from, &mut down_to);
        let _ = down_to.shutdown(Shutdown::Write);
    });
    let limit = match behavior {
        Behavior::CutAfter(n) | Behavior::StallAfter(n) => n,
        _ => u64::MAX,
    };
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let done = count.load(Ordering::SeqCst);
        if done >= limit {
            break;
        }
        let want = usize::try_from(limit - done)
            .unwrap_or(usize::MAX)
            .min(buf.len());
        let n = match client.read(&mut buf[..want]) {
            Ok(0) | Err(_) => {
                let _ = upstream.shutdown(Shutdown::Write);
                return;
            }
            Ok(n) => n,
        };
        if upstream.write_all(&buf[..n]).is_err() {
            let _ = client.shutdown(Shutdown::Both);
            return;
        }
        count.fetch_add(n as u64, Ordering::SeqCst);
    }
    // The limit: cut now, or leave both sides hanging until `cut_all`.
    match behavior {
        Behavior::CutAfter(_) => {
            let _ = client.shutdown(Shutdown::Both);
            let _ = upstream.shutdown(Shutdown::Both);
        }
        Behavior::StallAfter(_) => while matches!(client.read(&mut buf), Ok(n) if n > 0) {},
        _ => {}
    }
}

/// `weir put ARGS` with its state under `state`.
fn put_cmd(state: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(WEIR);
    cmd.arg("put")
        .args(args)
        .env_remove("WEIR_TOKEN")
        .env("XDG_STATE_HOME", state)
        .stdin(Stdio::null());
    cmd
}

fn put(state: &Path, args: &[&str]) -> Output {
    put_cmd(state, args).output().unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The state files `weir put` left.
fn state_files(state: &Path) -> Vec<std::path::PathBuf> {
    std::fs::read_dir(state.join("weir/uploads"))
        .map(|d| d.map(|e| e.unwrap().path()).collect())
        .unwrap_or_default()
}

/// The state file `weir put` recorded (written to a temporary, then renamed: the one without
/// `.tmp` is whole), once there is one.
fn recorded_state(state: &Path) -> Option<serde_json::Value> {
    let file = state_files(state)
        .into_iter()
        .find(|f| f.extension().is_none_or(|e| e != "tmp"))?;
    serde_json::from_str(&std::fs::read_to_string(file).ok()?).ok()
}

/// The upload offset the server reports for `upload` (`/uploads/{id}`).
fn server_offset(s: &Server, upload: &str) -> u64 {
    let r = s.request(&format!("HEAD {upload} HTTP/1.1"), b"");
    assert_eq!(r.status, 204, "{:?}", r.headers);
    r.header("upload-offset").unwrap().parse().unwrap()
}

/// Checks that the file at `path` in the store is `content`, byte for byte.
fn assert_stored(s: &Server, path: &str, content: &[u8]) {
    let stored = s.root.join(path);
    assert_eq!(sha256_file(&stored), sha256(content));
    assert_eq!(std::fs::read(&stored).unwrap(), content);
}

#[test]
fn a_connection_cut_mid_upload_is_resumed_and_the_file_is_exact() {
    let s = Server::start(&[]);
    let state = s.dir.path().join("state");
    let content = data(3 << 20, 71);
    let src = s.dir.path().join("cut.bin");
    std::fs::write(&src, &content).unwrap();
    let proxy = Proxy::start(s.addr, cut_first(1 << 20));
    let out = put(
        &state,
        &[src.to_str().unwrap(), &proxy.url("/files/cut.bin")],
    );
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("resumed 1 time, "), "{err}");
    assert!(err.contains("verified by the server"), "{err}");
    assert_stored(&s, "cut.bin", &content);
    // Created, asked the offset, appended: three connections.
    assert!(proxy.forwarded(2) > 0);
    assert!(state_files(&state).is_empty(), "{:?}", state_files(&state));
}

#[test]
fn no_resumable_sends_a_plain_put_and_a_cut_starts_it_again() {
    let s = Server::start(&[]);
    let state = s.dir.path().join("state");
    let len = 3u64 << 20;
    let content = data(len as usize, 73);
    let src = s.dir.path().join("plain.bin");
    std::fs::write(&src, &content).unwrap();
    let proxy = Proxy::start(s.addr, cut_first(1 << 20));
    let out = put(
        &state,
        &[
            "--no-resumable",
            "--retry-delay",
            "0",
            src.to_str().unwrap(),
            &proxy.url("/files/plain.bin"),
        ],
    );
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert!(!err.contains("resumed"), "{err}");
    assert_stored(&s, "plain.bin", &content);
    // No upload resource was created: the second connection carried the whole file again,
    // and no state was recorded.
    assert!(proxy.forwarded(1) >= len, "{}", proxy.forwarded(1));
    assert!(state_files(&state).is_empty(), "{:?}", state_files(&state));
    let area = s.root.join(".weir-staging/resumable");
    let left = std::fs::read_dir(&area).map_or(0, |d| d.count());
    assert_eq!(left, 0, "resumable records in {}", area.display());
}

/// Starts `weir put` of `src` through `proxy` (which must stall its first connection after
/// `stall` bytes) to `url`, SIGKILLs it once the stall is reached, drops the connection, and
/// returns the upload resource (`/uploads/{id}`, from the state file) and the server's offset.
fn killed_upload(
    s: &Server,
    proxy: &Proxy,
    state: &Path,
    src: &Path,
    url: &str,
    stall: u64,
) -> (String, u64) {
    let mut child = put_cmd(state, &[src.to_str().unwrap(), url])
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Recorded (renamed into place), not only being written: when the `104` comes late (over
    // a second, on a loaded machine) `weir put` sends the body first and records the upload
    // only after, around the stall.
    wait_for("the state file", || recorded_state(state).is_some());
    wait_for("the stall", || proxy.forwarded(0) == stall);
    child.kill().unwrap();
    child.wait().unwrap();
    let record = recorded_state(state).unwrap();
    let upload_url = record["upload"].as_str().unwrap().to_owned();
    let upload = upload_url[upload_url.find("/uploads/").unwrap()..].to_owned();
    // The connection drops with the client: the server keeps what arrived.
    proxy.cut_all();
    wait_for("the server's offset", || server_offset(s, &upload) > 0);
    let offset = server_offset(s, &upload);
    // At most what the proxy relayed, less the request head (the server keeps what it got).
    assert!(offset <= stall, "{offset}");
    (upload, offset)
}

/// The first connection is cut after `cut` bytes from the client; the others are relayed.
fn cut_first(cut: u64) -> impl Fn(usize) -> Behavior + Send + 'static {
    move |n| {
        if n == 0 {
            Behavior::CutAfter(cut)
        } else {
            Behavior::Relay
        }
    }
}

fn stall_first(stall: u64) -> impl Fn(usize) -> Behavior + Send + 'static {
    move |n| {
        if n == 0 {
            Behavior::StallAfter(stall)
        } else {
            Behavior::Relay
        }
    }
}

#[test]
fn a_killed_client_is_resumed_by_the_next_run() {
    let s = Server::start(&[]);
    let state = s.dir.path().join("state");
    let len = 4u64 << 20;
    let content = data(len as usize, 72);
    let src = s.dir.path().join("killed.bin");
    std::fs::write(&src, &content).unwrap();
    let stall = 3u64 << 19;
    let proxy = Proxy::start(s.addr, stall_first(stall));
    let url = proxy.url("/files/killed.bin");
    let (_, offset) = killed_upload(&s, &proxy, &state, &src, &url, stall);
    let before = proxy.total_forwarded();
    let out = put(&state, &["--resume", src.to_str().unwrap(), &url]);
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("resumed 1 time, 0 B sent twice"), "{err}");
    // Where it resumed, and the speed of this run's bytes only (issue 35: the whole size over
    // this run's time, and no word of the offset).
    assert!(
        err.contains(&format!("this run sent {} bytes)", len - offset)),
        "{err}"
    );
    assert!(
        err.contains(&format!("; resumed at byte {offset} (")),
        "{err}"
    );
    assert_stored(&s, "killed.bin", &content);
    // The second run sent the rest and two request heads, nothing of what the server had.
    let second = proxy.total_forwarded() - before;
    assert!(
        second >= len - offset && second < len - offset + 4096,
        "{second}"
    );
    assert!(state_files(&state).is_empty());
    // Nothing left to resume.
    let out = put(&state, &["--resume", src.to_str().unwrap(), &url]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("no interrupted upload of"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_503_and_a_cut_append_are_retried_until_the_upload_completes() {
    let s = Server::start(&[]);
    let state = s.dir.path().join("state");
    let content = data(3 << 20, 73);
    let src = s.dir.path().join("retry.bin");
    std::fs::write(&src, &content).unwrap();
    // 503 on the creation; then the creation cut; HEAD; the append cut; HEAD; the append.
    let proxy = Proxy::start(s.addr, |n| match n {
        0 => Behavior::Answer503,
        1 => Behavior::CutAfter(1 << 20),
        3 => Behavior::CutAfter(1 << 19),
        _ => Behavior::Relay,
    });
    let out = put(
        &state,
        &[
            "--retry-delay",
            "0.2",
            src.to_str().unwrap(),
            &proxy.url("/files/retry.bin"),
        ],
    );
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("server answered 503"), "{err}");
    assert!(err.contains("resumed 2 times, "), "{err}");
    assert_stored(&s, "retry.bin", &content);
}

#[test]
fn exhausted_retries_fail_with_one_clear_line() {
    let s = Server::start(&[]);
    let state = s.dir.path().join("state");
    let src = s.dir.path().join("never.bin");
    std::fs::write(&src, data(100_000, 74)).unwrap();
    let proxy = Proxy::start(s.addr, |_| Behavior::Close);
    let out = put(
        &state,
        &[
            "--retries",
            "2",
            "--retry-delay",
            "0.01",
            src.to_str().unwrap(),
            &proxy.url("/files/never.bin"),
        ],
    );
    assert!(!out.status.success());
    let err = stderr(&out);
    let last = err.lines().last().unwrap();
    assert!(
        last.starts_with("weir: upload failed after 3 tries: "),
        "{err}"
    );
    // Two retries announced, then the error: nothing else.
    assert_eq!(err.lines().count(), 3, "{err}");
    assert!(!s.root.join("never.bin").exists());
}

#[test]
fn an_https_upload_cut_mid_way_is_resumed() {
    // A self-signed certificate for 127.0.0.1, trusted by `--cacert`.
    let key = rcgen::KeyPair::generate().unwrap();
    let params = rcgen::CertificateParams::new(vec!["127.0.0.1".to_owned()]).unwrap();
    let cert = params.self_signed(&key).unwrap();
    let pki = tempfile::tempdir().unwrap();
    let (cert_path, key_path) = (pki.path().join("cert.pem"), pki.path().join("key.pem"));
    std::fs::write(&cert_path, cert.pem()).unwrap();
    std::fs::write(&key_path, key.serialize_pem()).unwrap();
    let s = Server::start(&[
        "--tls-cert",
        cert_path.to_str().unwrap(),
        "--tls-key",
        key_path.to_str().unwrap(),
    ]);
    let state = s.dir.path().join("state");
    let content = data((3 << 20) + 777, 75);
    let src = s.dir.path().join("tls.bin");
    std::fs::write(&src, &content).unwrap();
    let proxy = Proxy::start(s.addr, cut_first(1 << 20));
    let url = format!("https://{}/files/tls.bin", proxy.addr);
    let out = put(
        &state,
        &[
            "--cacert",
            cert_path.to_str().unwrap(),
            src.to_str().unwrap(),
            &url,
        ],
    );
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("resumed 1 time, "), "{err}");
    assert_stored(&s, "tls.bin", &content);
}

#[test]
fn an_h2c_upload_cut_mid_way_is_resumed() {
    let s = Server::start(&[]);
    let state = s.dir.path().join("state");
    let content = data((3 << 20) + 999, 76);
    let src = s.dir.path().join("h2.bin");
    std::fs::write(&src, &content).unwrap();
    let proxy = Proxy::start(s.addr, cut_first(1 << 20));
    let out = put(
        &state,
        &[
            "--http2",
            src.to_str().unwrap(),
            &proxy.url("/files/h2.bin"),
        ],
    );
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("resumed 1 time, "), "{err}");
    assert_stored(&s, "h2.bin", &content);
    assert!(state_files(&state).is_empty());
}

#[test]
fn an_upload_the_server_forgot_starts_over() {
    let s = Server::start(&[]);
    let state = s.dir.path().join("state");
    let content = data(2 << 20, 77);
    let src = s.dir.path().join("forgot.bin");
    std::fs::write(&src, &content).unwrap();
    let stall = 1 << 20;
    let proxy = Proxy::start(s.addr, stall_first(stall));
    let url = proxy.url("/files/forgot.bin");
    let (upload, _) = killed_upload(&s, &proxy, &state, &src, &url, stall);
    // Cancelled (or expired) on the server: the recorded resource answers 404.
    let r = s.request(&format!("DELETE {upload} HTTP/1.1"), b"");
    assert_eq!(r.status, 204, "{}", r.text());
    let out = put(&state, &[src.to_str().unwrap(), &url]);
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("no longer knows the upload; starting over"),
        "{err}"
    );
    assert_stored(&s, "forgot.bin", &content);
    assert!(state_files(&state).is_empty());
}

/// A folder's upload killed mid-file resumes file by file on the next run: the cut file from
/// the server's offset, the others uploaded, none sent twice (issue 35, point 1).
#[test]
fn a_killed_folder_upload_is_resumed_by_the_next_run() {
    let s = Server::start(&[]);
    let state = s.dir.path().join("state");
    let dir = s.dir.path().join("batch");
    std::fs::create_dir_all(dir.join("sub")).unwrap();
    let big = data(4 << 20, 73);
    std::fs::write(dir.join("a.bin"), &big).unwrap();
    std::fs::write(dir.join("b.txt"), b"bee").unwrap();
    std::fs::write(dir.join("sub/c.txt"), b"sea").unwrap();
    let stall = 3u64 << 19;
    let proxy = Proxy::start(s.addr, stall_first(stall));
    let url = proxy.url("/files/in/");
    // One file at a time: `a.bin` (first by name) on the connection that stalls.
    let mut child = put_cmd(&state, &["--jobs", "1", dir.to_str().unwrap(), &url])
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_for("the state file", || recorded_state(&state).is_some());
    wait_for("the stall", || proxy.forwarded(0) == stall);
    child.kill().unwrap();
    child.wait().unwrap();
    proxy.cut_all();
    let record = recorded_state(&state).unwrap();
    let upload_url = record["upload"].as_str().unwrap().to_owned();
    let upload = upload_url[upload_url.find("/uploads/").unwrap()..].to_owned();
    wait_for("the server's offset", || server_offset(&s, &upload) > 0);
    let offset = server_offset(&s, &upload);
    assert!(!s.root.join("in/batch/b.txt").exists());

    let out = put(&state, &["--jobs", "2", dir.to_str().unwrap(), &url]);
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("Uploaded 3 of 3 files"), "{err}");
    let a_line = err.lines().find(|l| l.starts_with("a.bin: ")).unwrap();
    assert!(
        a_line.contains(&format!("resumed at byte {offset} ")),
        "{a_line}"
    );
    assert!(
        a_line.contains(&format!(
            "this run sent {} bytes)",
            big.len() as u64 - offset
        )),
        "{a_line}"
    );
    assert_stored(&s, "in/batch/a.bin", &big);
    assert_stored(&s, "in/batch/b.txt", b"bee");
    assert_stored(&s, "in/batch/sub/c.txt", b"sea");
    assert!(state_files(&state).is_empty());
}
