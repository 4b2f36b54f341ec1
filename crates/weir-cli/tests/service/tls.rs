//! `weir put` / `weir get` over HTTPS (HTTP/1.1, and HTTP/2 by ALPN) and over cleartext HTTP/2
//! (prior knowledge), against `weir serve --tls-cert/--tls-key` with a certificate issued here
//! by a test CA: byte-exact round trips, and certificate and protocol failures as one line.

use crate::support::*;
use std::io::Read;
use std::path::{Path, PathBuf};

/// A test CA, a server certificate it issued (for `localhost` and `127.0.0.1`), and an
/// unrelated CA, as PEM files.
pub(crate) struct Pki {
    _dir: tempfile::TempDir,
    pub ca: PathBuf,
    other_ca: PathBuf,
    pub cert: PathBuf,
    pub key: PathBuf,
}

fn ca(name: &str) -> (String, rcgen::Issuer<'static, rcgen::KeyPair>) {
    let key = rcgen::KeyPair::generate().unwrap();
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, name);
    params.key_usages = vec![
        rcgen::KeyUsagePurpose::KeyCertSign,
        rcgen::KeyUsagePurpose::DigitalSignature,
    ];
    let cert = params.self_signed(&key).unwrap();
    (cert.pem(), rcgen::Issuer::new(params, key))
}

pub(crate) fn pki() -> Pki {
    pki_for(&["localhost", "127.0.0.1"])
}

/// A [`Pki`] whose server certificate names `names`.
fn pki_for(names: &[&str]) -> Pki {
    let dir = tempfile::tempdir().unwrap();
    let (ca_pem, issuer) = ca("weir test CA");
    let (other_pem, _) = ca("some other CA");
    let key = rcgen::KeyPair::generate().unwrap();
    let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
    let params = rcgen::CertificateParams::new(names).unwrap();
    let cert = params.signed_by(&key, &issuer).unwrap();
    let write = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path
    };
    Pki {
        ca: write("ca.pem", &ca_pem),
        other_ca: write("other-ca.pem", &other_pem),
        cert: write("cert.pem", &cert.pem()),
        key: write("key.pem", &key.serialize_pem()),
        _dir: dir,
    }
}

fn tls_server(pki: &Pki, extra: &[&str]) -> Server {
    let mut args = vec![
        "--tls-cert",
        pki.cert.to_str().unwrap(),
        "--tls-key",
        pki.key.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    Server::start(&args)
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// `weir put` then `weir get` of `content` at `path`, with `flags`; checks the summaries, the
/// stored file and the downloaded one, byte for byte.
fn round_trip(
    s: &Server,
    url: impl Fn(&str) -> String,
    flags: &[&str],
    content: &[u8],
    name: &str,
) {
    let src = s.dir.path().join(format!("{name}.src"));
    std::fs::write(&src, content).unwrap();
    let mut args = vec!["put", src.to_str().unwrap()];
    let put_url = url(&format!("/files/{name}"));
    args.push(&put_url);
    args.extend_from_slice(flags);
    let out = weir(&args);
    let err = stderr(&out);
    assert!(out.status.success(), "{flags:?}: {err}");
    assert!(err.starts_with("Uploaded "), "{flags:?}: {err}");
    assert!(err.contains("verified by the server"), "{flags:?}: {err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert_eq!(
        std::fs::read(s.root.join(name)).unwrap(),
        content,
        "{flags:?}"
    );

    let dest = s.dir.path().join(format!("{name}.got"));
    let mut args = vec!["get", &put_url, dest.to_str().unwrap()];
    args.extend_from_slice(flags);
    let out = weir(&args);
    let err = stderr(&out);
    assert!(out.status.success(), "{flags:?}: {err}");
    assert!(err.starts_with("Downloaded "), "{flags:?}: {err}");
    assert!(err.contains("sha-256 verified"), "{flags:?}: {err}");
    assert_eq!(std::fs::read(&dest).unwrap(), content, "{flags:?}");
}

#[test]
fn https_round_trips_are_byte_exact_over_http1_and_http2() {
    let pki = pki();
    let s = tls_server(&pki, &[]);
    let ca = pki.ca.to_str().unwrap();
    // Not a multiple of a TLS record (16 KiB) nor of an HTTP/2 frame (256 KiB).
    let content = data((5 << 20) + 12_345, 41);
    let url = |p: &str| s.https_url(p);
    round_trip(&s, url, &["--cacert", ca], &content, "h1.bin");
    round_trip(&s, url, &["--cacert", ca, "--http2"], &content, "h2.bin");
    round_trip(&s, url, &["--cacert", ca], b"", "h1-empty");
    round_trip(&s, url, &["--cacert", ca, "--http2"], b"", "h2-empty");
    // The name in the URL is checked against the certificate: `localhost` is in it too.
    let by_name = |p: &str| format!("https://localhost:{}{p}", s.addr.port());
    round_trip(&s, by_name, &["--cacert", ca, "--http2"], b"x", "by-name");
}

#[test]
fn h2c_round_trip_is_byte_exact() {
    let s = Server::start(&[]);
    let content = data((3 << 20) + 777, 42);
    round_trip(&s, |p| s.url(p), &["--http2"], &content, "h2c.bin");
    round_trip(&s, |p| s.url(p), &["--http2"], b"", "h2c-empty");
}

#[test]
fn http2_in_the_clear_starts_with_the_connection_preface() {
    // A listener that records what the client sends first, then hangs up.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let first = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        let mut preface = [0u8; 24];
        s.read_exact(&mut preface).unwrap();
        preface
    });
    let dir = tempfile::tempdir().unwrap();
    let out = weir(&[
        "get",
        "--http2",
        &format!("http://{addr}/files/f"),
        dir.path().join("f").to_str().unwrap(),
    ]);
    assert!(!out.status.success());
    assert_eq!(&first.join().unwrap(), b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
}

fn fails_in_one_line(args: &[&str], needle: &str) {
    let out = weir(args);
    let err = stderr(&out);
    assert!(!out.status.success(), "{args:?}: {err}");
    assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
    assert!(
        err.starts_with("weir: ") && err.contains(needle),
        "{args:?}: {err}"
    );
}

#[test]
fn untrusted_certificates_fail_in_one_line() {
    let pki = pki();
    let s = tls_server(&pki, &[]);
    let src = s.dir.path().join("f");
    std::fs::write(&src, b"data").unwrap();
    let dest = s.dir.path().join("out");
    let other = pki.other_ca.to_str().unwrap();
    let url = s.https_url("/files/f");
    let refused = format!(
        "TLS with {} failed: the server's certificate is not signed by a trusted CA",
        s.addr
    );
    for http2 in [false, true] {
        let h2: &[&str] = if http2 { &["--http2"] } else { &[] };
        let mut put = vec!["put", src.to_str().unwrap(), &url, "--cacert", other];
        put.extend_from_slice(h2);
        fails_in_one_line(&put, &refused);
        let mut get = vec!["get", &url, dest.to_str().unwrap(), "--cacert", other];
        get.extend_from_slice(h2);
        fails_in_one_line(&get, &refused);
        // Without --cacert the system's roots are used, and the test CA is not among them.
        let mut put = vec!["put", src.to_str().unwrap(), &url];
        put.extend_from_slice(h2);
        let out = weir(&put);
        assert!(!out.status.success());
        assert_eq!(stderr(&out).lines().count(), 1, "{}", stderr(&out));
    }
    assert!(!dest.exists());
    assert!(!s.root.join("f").exists(), "nothing stored");
    // A certificate for another name than the URL's.
    let elsewhere = pki_for(&["files.example"]);
    let s2 = tls_server(&elsewhere, &[]);
    fails_in_one_line(
        &[
            "get",
            &s2.https_url("/files/f"),
            dest.to_str().unwrap(),
            "--cacert",
            elsewhere.ca.to_str().unwrap(),
        ],
        "the server's certificate is not valid for 127.0.0.1",
    );
    // A --cacert that is not a certificate.
    fails_in_one_line(
        &[
            "get",
            &url,
            dest.to_str().unwrap(),
            "--cacert",
            pki.key.to_str().unwrap(),
        ],
        "no certificate found",
    );
}

#[test]
fn https_to_a_plain_server_fails_in_one_line() {
    let s = Server::start(&[]);
    let dest = s.dir.path().join("out");
    let url = format!("https://{}/files/f", s.addr);
    for flags in [&[][..], &["--http2"][..]] {
        let mut args = vec!["get", &url, dest.to_str().unwrap(), "--cacert", "/dev/null"];
        args.extend_from_slice(flags);
        // An empty --cacert is refused before connecting.
        fails_in_one_line(&args, "no certificate found");
    }
    let pki = pki();
    let args = [
        "get",
        &url,
        dest.to_str().unwrap(),
        "--cacert",
        pki.ca.to_str().unwrap(),
    ];
    fails_in_one_line(&args, &format!("TLS with {} failed", s.addr));
}

#[test]
fn http2_refusals_are_one_line_and_store_nothing() {
    let pki = pki();
    let s = tls_server(&pki, &["--token", "secret", "--max-upload", "1MiB"]);
    let ca = pki.ca.to_str().unwrap();
    let src = s.dir.path().join("f");
    std::fs::write(&src, data(3 << 20, 43)).unwrap();
    let url = s.https_url("/files/f");
    let src = src.to_str().unwrap();
    let dest = s.dir.path().join("not-there");
    fails_in_one_line(
        &["put", src, &url, "--cacert", ca, "--http2"],
        "server answered 401",
    );
    fails_in_one_line(
        &[
            "put", src, &url, "--cacert", ca, "--http2", "--token", "secret",
        ],
        "server answered 413",
    );
    fails_in_one_line(
        &[
            "get",
            &url,
            dest.to_str().unwrap(),
            "--cacert",
            ca,
            "--http2",
            "--token",
            "secret",
        ],
        "server answered 404",
    );
    assert!(!s.root.join("f").exists());
    assert!(s.temps().is_empty());
    let _ = Path::new(src);
}

/// The `openssl req` command docs/OPERATING.md gives for a self-signed certificate, as written
/// there (its continuation lines joined): the test runs the documentation, so the two cannot
/// drift apart.
fn documented_certificate_command() -> String {
    let docs = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/OPERATING.md");
    let text = std::fs::read_to_string(docs).unwrap();
    let mut lines = text
        .lines()
        .skip_while(|l| !l.starts_with("openssl req -x509"));
    let mut command = String::new();
    for line in lines.by_ref() {
        match line.strip_suffix('\\') {
            Some(part) => command.push_str(part),
            None => {
                command.push_str(line);
                return command;
            }
        }
    }
    panic!("docs/OPERATING.md has no complete `openssl req -x509` command");
}

/// Runs `command` with `sh` in `dir` (where it writes key.pem and cert.pem).
fn run_openssl(command: &str, dir: &Path) {
    let out = std::process::Command::new("sh")
        .args(["-c", command])
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{command}: {}", stderr(&out));
}

#[test]
fn the_documented_self_signed_certificate_is_accepted_by_weir_put_and_get() {
    let found = weir_testkit::tools::on_path("openssl").is_some();
    if !weir_testkit::tools::require("openssl", found, "apt-get install openssl") {
        return;
    }
    let command = documented_certificate_command();
    assert!(command.contains("CA:FALSE"), "{command}");
    let certs = tempfile::tempdir().unwrap();
    run_openssl(&command, certs.path());
    let (cert, key) = (certs.path().join("cert.pem"), certs.path().join("key.pem"));
    let s = Server::start(&[
        "--tls-cert",
        cert.to_str().unwrap(),
        "--tls-key",
        key.to_str().unwrap(),
    ]);
    let ca = cert.to_str().unwrap();
    let by_address = |p: &str| s.https_url(p);
    round_trip(&s, by_address, &["--cacert", ca], b"documented", "doc.txt");
    let by_name = |p: &str| s.https_url(p).replace("127.0.0.1", "localhost");
    round_trip(
        &s,
        by_name,
        &["--cacert", ca, "--http2"],
        b"x",
        "doc-h2.txt",
    );

    // Why the docs insist on `CA:FALSE`: without it, openssl makes a CA certificate, which the
    // client refuses as a server's own, in one line that says so.
    let plain_x509 = command.replace("-addext \"basicConstraints=critical,CA:FALSE\"", "");
    assert_ne!(plain_x509, command);
    let ca_certs = tempfile::tempdir().unwrap();
    run_openssl(&plain_x509, ca_certs.path());
    let ca_cert = ca_certs.path().join("cert.pem");
    let s = Server::start(&[
        "--tls-cert",
        ca_cert.to_str().unwrap(),
        "--tls-key",
        ca_certs.path().join("key.pem").to_str().unwrap(),
    ]);
    let src = s.dir.path().join("src");
    std::fs::write(&src, b"never stored").unwrap();
    let url = s.https_url("/files/refused");
    let args = [
        "put",
        src.to_str().unwrap(),
        &url,
        "--cacert",
        ca_cert.to_str().unwrap(),
    ];
    fails_in_one_line(&args, "CA certificate");
    assert!(!s.root.join("refused").exists());
}
