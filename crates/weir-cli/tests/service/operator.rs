//! Bad operator input: one clear line on stderr and a non-zero exit, before serving anything.

use crate::support::*;
use std::process::Command;

/// Runs `weir ARGS` expecting a start-up failure; returns its one line of stderr.
fn fails(args: &[&str]) -> String {
    let out = Command::new(WEIR)
        .args(args)
        .env_remove("WEIR_TOKEN")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success(), "{args:?} succeeded");
    assert_eq!(err.lines().count(), 1, "{args:?}: {err:?}");
    assert!(err.starts_with("weir: "), "{err}");
    assert!(out.stdout.is_empty(), "{args:?} started serving");
    err
}

#[test]
fn invalid_flags() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("r");
    let root = root.to_str().unwrap();
    let err = fails(&["serve", "--bogus"]);
    assert!(err.contains("--bogus"), "{err}");
    let err = fails(&["serve", "--root", root, "--max-upload", "5parsecs"]);
    assert!(err.contains("max-upload"), "{err}");
    let err = fails(&["serve", "--root", root, "--listen", "nowhere"]);
    assert!(err.contains("listen"), "{err}");
    let err = fails(&["serve", "--root", root, "--pause-threshold", "1"]);
    assert!(err.contains("pause-threshold"), "{err}");
    let err = fails(&["serve", "--root", root, "--token-read"]);
    assert!(err.contains("token"), "{err}");
    fails(&["frobnicate"]);
    fails(&["put", "only-one-arg"]);
    assert!(
        !dir.path().join("r").exists(),
        "nothing created for a bad command line"
    );
}

#[test]
fn address_in_use() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("r");
    let err = fails(&["serve", "--root", root.to_str().unwrap(), "--listen", &addr]);
    assert!(
        err.contains("cannot listen on") && err.contains(&addr),
        "{err}"
    );
}

#[test]
fn unusable_roots() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("a-file");
    std::fs::write(&file, b"x").unwrap();
    let err = fails(&[
        "serve",
        "--root",
        file.to_str().unwrap(),
        "--listen",
        "127.0.0.1:0",
    ]);
    assert!(
        err.contains("storage root") && err.contains("a-file"),
        "{err}"
    );
    let below = file.join("below");
    fails(&[
        "serve",
        "--root",
        below.to_str().unwrap(),
        "--listen",
        "127.0.0.1:0",
    ]);
    // A directory nobody may create files in, even root: procfs.
    let err = fails(&[
        "serve",
        "--root",
        "/proc/self/fdinfo",
        "--listen",
        "127.0.0.1:0",
    ]);
    assert!(err.contains("storage root"), "{err}");
    // Permissions, where they apply (not to root).
    let ro = dir.path().join("read-only");
    std::fs::create_dir(&ro).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o555)).unwrap();
    if std::fs::write(ro.join("probe"), b"").is_err() {
        let err = fails(&[
            "serve",
            "--root",
            ro.to_str().unwrap(),
            "--listen",
            "127.0.0.1:0",
        ]);
        assert!(err.contains("storage root"), "{err}");
    }
    std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o755)).unwrap();
}

#[test]
fn a_root_held_by_another_weir() {
    let s = Server::start(&[]);
    let err = fails(&[
        "serve",
        "--root",
        s.root.to_str().unwrap(),
        "--listen",
        "127.0.0.1:0",
    ]);
    assert!(err.contains("in use"), "{err}");
    // The first one is unaffected.
    assert_eq!(s.request("GET /healthz HTTP/1.1", b"").status, 200);
}

#[test]
fn unusable_certificates() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("r");
    let root = root.to_str().unwrap();
    let garbage = dir.path().join("garbage.pem");
    std::fs::write(&garbage, "not a certificate\n").unwrap();
    let garbage = garbage.to_str().unwrap();
    let missing = dir.path().join("missing.pem");
    let missing = missing.to_str().unwrap();
    let serve = |cert: &str, key: &str| {
        fails(&[
            "serve",
            "--root",
            root,
            "--listen",
            "127.0.0.1:0",
            "--tls-cert",
            cert,
            "--tls-key",
            key,
        ])
    };
    let err = serve(missing, garbage);
    assert!(err.contains("missing.pem"), "{err}");
    let err = serve(garbage, garbage);
    assert!(
        err.contains("garbage.pem") && err.contains("certificate"),
        "{err}"
    );
    // A key without its certificate flag is a usage error.
    let err = fails(&["serve", "--root", root, "--tls-key", garbage]);
    assert!(err.contains("tls-cert"), "{err}");
    assert!(
        !dir.path().join("r").exists(),
        "nothing created before the certificate loads"
    );
}

/// systemd readiness: `READY=1` on `NOTIFY_SOCKET` once the listeners are bound (a request
/// succeeds right after it), `STOPPING=1` on SIGTERM.
#[test]
fn readiness_and_stopping_are_notified() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    let (socket, child, addr) = spawn_notifying(dir.path(), &root);
    let mut s = Server {
        child,
        addr,
        dir,
        root,
    };
    let mut buf = [0; 64];
    let n = socket.recv(&mut buf).unwrap();
    assert_eq!(&buf[..n], b"READY=1");
    assert_eq!(s.request("GET /healthz HTTP/1.1", b"").status, 200);
    let killed = Command::new("kill")
        .args(["-TERM", &s.pid().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let n = socket.recv(&mut buf).unwrap();
    assert_eq!(&buf[..n], b"STOPPING=1");
    assert!(s.child.wait().unwrap().success(), "a clean exit on SIGTERM");
}

/// A SIGTERM sent the moment `READY=1` arrives (a service manager stopping a unit that just
/// started) is a graceful stop: the handler is installed before readiness is told. Sent with
/// `kill(2)` from this process, microseconds after the datagram, which is when a handler
/// installed only once the server starts serving was still missing.
#[cfg(target_os = "linux")]
#[test]
fn a_sigterm_right_after_readiness_is_a_graceful_stop() {
    use rustix::process::{Pid, Signal, kill_process};
    for _ in 0..5 {
        let dir = tempfile::tempdir().unwrap();
        let (socket, mut child, _addr) = spawn_notifying(dir.path(), &dir.path().join("root"));
        let mut buf = [0; 64];
        let n = socket.recv(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"READY=1");
        let pid = Pid::from_raw(i32::try_from(child.id()).unwrap()).unwrap();
        kill_process(pid, Signal::TERM).unwrap();
        let status = child.wait().unwrap();
        assert!(status.success(), "SIGTERM right after READY=1: {status}");
        let n = socket.recv(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"STOPPING=1");
    }
}

/// `weir serve` on `root` told to notify a datagram socket in `dir` (`NOTIFY_SOCKET`, as systemd
/// sets it); the socket waits at most 30 s for a datagram.
fn spawn_notifying(
    dir: &std::path::Path,
    root: &std::path::Path,
) -> (
    std::os::unix::net::UnixDatagram,
    std::process::Child,
    std::net::SocketAddr,
) {
    let socket_path = dir.join("notify.sock");
    let socket = std::os::unix::net::UnixDatagram::bind(&socket_path).unwrap();
    socket
        .set_read_timeout(Some(std::time::Duration::from_secs(30)))
        .unwrap();
    let (child, addr) = spawn(
        root,
        dir,
        &[],
        &[("NOTIFY_SOCKET", socket_path.to_str().unwrap())],
    )
    .unwrap_or_else(|e| panic!("{e}"));
    (socket, child, addr)
}

/// The service's own messages (`tracing`) to a stderr that is not a terminal (a file here;
/// journald in a unit) carry no colour codes: they were written with ANSI escapes (issue 35).
#[test]
fn messages_to_a_file_have_no_colour_codes() {
    let mut s = Server::start(&[]);
    // Answered only once serving has begun, after the signal handlers are installed.
    assert_eq!(s.request("GET /healthz HTTP/1.1", b"").status, 200);
    let killed = Command::new("kill")
        .args(["-TERM", &s.pid().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    assert!(s.child.wait().unwrap().success());
    let log = std::fs::read_to_string(s.dir.path().join("server-stderr.log")).unwrap();
    assert!(
        log.contains("INFO") && log.contains("shutting down"),
        "{log}"
    );
    assert!(
        !log.contains('\u{1b}'),
        "ANSI escape codes in a log file: {log:?}"
    );
}
