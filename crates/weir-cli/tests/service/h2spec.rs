//! h2spec itself, strict, against the `weir serve` binary over h2c and over TLS (a certificate
//! made here; h2spec's own TLS client with `-k`), on `/files/`: GET lists the (empty) root,
//! POST without a multipart body is answered 415 without its body being read. weir serve has no
//! route whose handler reads the body h2spec sends (a POST without a multipart type); that
//! case runs against the library in `crates/weir/tests/integration/h2spec.rs`, whose runner
//! and report reading this test shares. Every case must pass, over h2c too (3.5 #2, an invalid
//! preface, is closed unanswered on the shared cleartext port; see there).

use crate::support::Server;
use weir_testkit::h2spec::{assert_all_pass, h2spec_binary, run_h2spec};

/// weir serve's SETTINGS_MAX_FRAME_SIZE (`weir::Http2Config`'s default).
const MAX_FRAME_SIZE: u32 = 256 * 1024;

#[test]
fn h2spec_strict_passes_against_weir_serve_over_h2c_and_tls() {
    let Some(bin) = h2spec_binary() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let key = rcgen::KeyPair::generate().unwrap();
    let params = rcgen::CertificateParams::new(vec!["127.0.0.1".to_owned()]).unwrap();
    let cert = params.self_signed(&key).unwrap();
    let (cert_path, key_path) = (dir.path().join("cert.pem"), dir.path().join("key.pem"));
    std::fs::write(&cert_path, cert.pem()).unwrap();
    std::fs::write(&key_path, key.serialize_pem()).unwrap();
    let plain = Server::start(&[]);
    let tls = Server::start(&[
        "--tls-cert",
        cert_path.to_str().unwrap(),
        "--tls-key",
        key_path.to_str().unwrap(),
    ]);
    let runs: Vec<_> = [(plain.addr, false), (tls.addr, true)]
        .into_iter()
        .map(|(addr, over_tls)| {
            let bin = bin.clone();
            let run = std::thread::spawn(move || {
                run_h2spec(&bin, addr, over_tls, "/files/", MAX_FRAME_SIZE)
            });
            (over_tls, run)
        })
        .collect();
    for (over_tls, run) in runs {
        let run = run.join().unwrap();
        if over_tls {
            assert_all_pass(&run, "weir serve, TLS, /files/", &[]);
        } else {
            assert_all_pass(&run, "weir serve, h2c, /files/", &[]);
        }
    }
}
