//! Configuration: the `--config` TOML file, `WEIR_…` environment variables and flags, their
//! precedence, every start-up mistake as one line, and listeners by name, `:port`, several,
//! HTTP and HTTPS together.

use crate::support::*;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

/// Starts `weir serve` with `args` and `env` (and `--listen 127.0.0.1:0`, from `spawn`).
fn start(args: &[&str], env: &[(&str, &str)]) -> Server {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    let (child, addr) = spawn(&root, dir.path(), args, env).unwrap_or_else(|e| panic!("{e}"));
    Server {
        child,
        addr,
        dir,
        root,
    }
}

/// The status of a `PUT` declaring `len` bytes (413 comes before the body; else the body is sent).
fn put_status(s: &Server, len: usize) -> u16 {
    s.request(&format!("PUT /files/f{len} HTTP/1.1"), &vec![b'x'; len])
        .status
}

#[test]
fn flags_beat_the_environment_which_beats_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("weir.toml");
    std::fs::write(
        &file,
        "max-upload = 1000\nno-hash = true\nlog-format = \"json\"\n",
    )
    .unwrap();
    let config = file.to_str().unwrap();

    let s = start(&["--config", config], &[]);
    assert_eq!((put_status(&s, 900), put_status(&s, 1500)), (201, 413));
    let answer = s.request("PUT /files/h HTTP/1.1", b"abc").json();
    assert!(
        answer["sha256"].is_null(),
        "no-hash from the file: {answer}"
    );

    let env = [("WEIR_MAX_UPLOAD", "2000"), ("WEIR_NO_HASH", "false")];
    let s = start(&["--config", config], &env);
    assert_eq!((put_status(&s, 1500), put_status(&s, 2500)), (201, 413));
    let answer = s.request("PUT /files/h HTTP/1.1", b"abc").json();
    assert_eq!(answer["sha256"], sha256(b"abc").as_str(), "env beats file");

    let s = start(&["--config", config, "--max-upload", "3000"], &env);
    assert_eq!((put_status(&s, 2500), put_status(&s, 3500)), (201, 413));

    // The file's log format applied (no flag or variable set it).
    let log = s.dir.path().join("server-stderr.log");
    wait_for("a JSON access log line", || {
        let log = std::fs::read_to_string(&log).unwrap();
        log.lines().any(|l| l.starts_with("{\"time\""))
    });

    // The config file itself from the environment.
    let s = start(&[], &[("WEIR_CONFIG", config)]);
    assert_eq!(put_status(&s, 1500), 413);
}

/// Runs `weir serve ARGS` (with `env`) expecting it not to start, and to create nothing;
/// returns its stderr lines.
fn refused(args: &[&str], env: &[(&str, &str)]) -> Vec<String> {
    refused_checking_root(args, env, true)
}

/// [`refused`], for mistakes found once the store is open.
fn refused_late(args: &[&str], env: &[(&str, &str)]) -> Vec<String> {
    refused_checking_root(args, env, false)
}

fn refused_checking_root(args: &[&str], env: &[(&str, &str)], early: bool) -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(WEIR);
    cmd.arg("serve")
        .arg("--root")
        .arg(dir.path().join("r"))
        .args(args)
        .env_remove("WEIR_TOKEN");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    assert!(!out.status.success(), "{args:?} started");
    assert!(out.stdout.is_empty(), "{args:?} started serving");
    assert!(
        !early || !dir.path().join("r").exists(),
        "{args:?} created the root"
    );
    let err = String::from_utf8(out.stderr).unwrap();
    let lines: Vec<String> = err.lines().map(str::to_owned).collect();
    assert!(lines.iter().all(|l| l.starts_with("weir: ")), "{err}");
    lines
}

fn one(args: &[&str], env: &[(&str, &str)], needle: &str) {
    let lines = refused(args, env);
    assert_eq!(lines.len(), 1, "{args:?}: {lines:#?}");
    assert!(lines[0].contains(needle), "{args:?}: {lines:#?}");
}

#[test]
fn every_mistake_in_the_file_is_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bad.toml");
    std::fs::write(
        &file,
        "bogus = 1\nmax-upload = \"5parsecs\"\nno-hash = \"yes\"\nunix = { a = 1 }\n\
         head-timeout = 5\nlisten = [\"nowhere\"]\nconfig = \"x\"\n",
    )
    .unwrap();
    let name = file.to_str().unwrap();
    let lines = refused(&["--config", name], &[]);
    let expect = [
        "unknown option `bogus`",
        "max-upload: invalid value '5parsecs'",
        "no-hash must be true or false",
        "unix must be a string",
        "head-timeout: invalid value '5'",
        "listen: invalid value 'nowhere'",
        "unknown option `config`",
    ];
    assert_eq!(lines.len(), expect.len(), "{lines:#?}");
    for needle in expect {
        assert!(
            lines.iter().any(|l| l.contains(needle) && l.contains(name)),
            "{needle}: {lines:#?}"
        );
    }
    // Not TOML: the line of the mistake.
    std::fs::write(&file, "max-upload = 1\nlisten = [\n").unwrap();
    one(&["--config", name], &[], &format!("{name}:2:"));
    one(
        &["--config", "/nonexistent/weir.toml"],
        &[],
        "cannot read the config file",
    );
    // A mistake in the file is not hidden by a flag that overrides it... it is skipped: the
    // flag wins, and the file's value is never used.
    std::fs::write(&file, "max-upload = \"5parsecs\"\n").unwrap();
    let s = start(&["--config", name, "--max-upload", "10"], &[]);
    assert_eq!(put_status(&s, 20), 413);
}

#[test]
fn every_flag_and_variable_mistake_is_one_line() {
    /// Flags, environment, a word the one line must contain.
    type Case<'a> = (&'a [&'a str], &'a [(&'a str, &'a str)], &'a str);
    let cases: &[Case<'_>] = &[
        (&["--listen", "nowhere"], &[], "--listen"),
        (&["--listen", "127.0.0.1:99999"], &[], "port"),
        (&["--listen", "a b:80"], &[], "--listen"),
        (&[], &[("WEIR_LISTEN", "127.0.0.1:x")], "--listen"),
        (&["--max-connections", "0"], &[], "--max-connections"),
        (&["--max-connections", "many"], &[], "--max-connections"),
        (&["--head-timeout", "0s"], &[], "--head-timeout"),
        (&[], &[("WEIR_IDLE_TIMEOUT", "soon")], "--idle-timeout"),
        (&["--min-body-rate", "fast"], &[], "--min-body-rate"),
        (&["--min-response-rate", "-1"], &[], "-1"),
        (&["--shutdown-grace", "1y"], &[], "--shutdown-grace"),
        (&["--listen-tls", "127.0.0.1:0"], &[], "--tls-cert"),
        (&["--log-format", "xml"], &[], "--log-format"),
        (&["--metrics-listen", "here"], &[], "--metrics-listen"),
        (&["--token", ""], &[], "token"),
        (&[], &[("WEIR_TOKEN", "")], "token"),
        (&[], &[("WEIR_MAX_UPLOAD", "0")], "--max-upload"),
        (
            &["--access-log", "/x", "--no-access-log"],
            &[],
            "--no-access-log",
        ),
        (&["--access-log", "/nonexistent/dir/log"], &[], "access log"),
    ];
    for (args, env, needle) in cases {
        one(args, env, needle);
    }
    // Listeners are bound once the store is open (so the root exists by then).
    let lines = refused_late(&["--metrics-listen", "256.0.0.1:0"], &[]);
    assert!(
        lines.len() == 1 && lines[0].contains("cannot listen on 256.0.0.1:0"),
        "{lines:?}"
    );
}

/// Starts `weir serve ARGS` and reads its `n` "serving" lines: (scheme, address).
fn start_listeners(args: &[&str], n: usize) -> (std::process::Child, Vec<(String, String)>) {
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(WEIR)
        .arg("serve")
        .arg("--root")
        .arg(dir.path().join("r"))
        .args(args)
        .env_remove("WEIR_TOKEN")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut found = Vec::new();
    for _ in 0..n {
        let mut line = String::new();
        out.read_line(&mut line).unwrap();
        let (_, url) = line.trim().rsplit_once(" on ").unwrap();
        let (scheme, addr) = url.split_once("://").unwrap();
        found.push((scheme.to_owned(), addr.to_owned()));
    }
    // Keep the dir alive as long as the process: leak it into the test's lifetime.
    std::mem::forget(dir);
    (child, found)
}

#[test]
fn listeners_by_name_and_port_http_and_https_together() {
    let pki = crate::tls::pki();
    let (mut child, listeners) = start_listeners(
        &[
            "--listen",
            "localhost:0",
            "--listen",
            ":0",
            "--allow-anonymous-write",
            "--listen-tls",
            "127.0.0.1:0",
            "--tls-cert",
            pki.cert.to_str().unwrap(),
            "--tls-key",
            pki.key.to_str().unwrap(),
        ],
        3,
    );
    let schemes: Vec<&str> = listeners.iter().map(|(s, _)| s.as_str()).collect();
    assert_eq!(schemes, ["http", "http", "https"]);
    assert!(listeners[1].1.starts_with("0.0.0.0:"), "{listeners:?}");
    let port = |i: usize| listeners[i].1.rsplit_once(':').unwrap().1.to_owned();
    let urls = [
        format!("http://localhost:{}/healthz", port(0)),
        format!("http://127.0.0.1:{}/healthz", port(1)),
        format!("https://localhost:{}/healthz", port(2)),
    ];
    for url in &urls {
        let (status, body) = curl_status(&["--cacert", pki.ca.to_str().unwrap(), url]);
        assert_eq!((status, body.as_slice()), (200, &b"ok\n"[..]), "{url}");
    }
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn head_timeout_flag_applies() {
    let s = start(&["--head-timeout", "1s"], &[]);
    let mut c = std::net::TcpStream::connect(s.addr).unwrap();
    // Far under the default head timeout (30 s): without the flag the read fails.
    c.set_read_timeout(Some(std::time::Duration::from_secs(15)))
        .unwrap();
    std::io::Write::write_all(&mut c, b"GET /healthz HTTP/1.1\r\n").unwrap();
    let mut raw = Vec::new();
    std::io::Read::read_to_end(&mut c, &mut raw).unwrap();
    assert!(
        raw.starts_with(b"HTTP/1.1 408"),
        "{}",
        String::from_utf8_lossy(&raw)
    );
}
