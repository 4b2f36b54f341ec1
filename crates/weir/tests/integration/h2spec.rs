//! h2spec itself (2.6.0, built from its source: `../shared/tools/h2spec` beside the
//! checkout, see the README there), strict, against weir over h2c and over TLS (h2spec's own
//! TLS client, ALPN `h2`), on a route whose handler reads the body to its end and on one whose
//! handler answers without reading it. Every case must pass, in every run: a handler that
//! answers first must not change the answer to what the client sends after (h2spec sends a
//! request and its faulty rest at once, so the response races them).
//!
//! Two things are set to meet the cases' own preconditions, not to please them:
//! - both routes answer GET with more than five bytes (6.9.2 #2 skips itself otherwise);
//! - `--max-header-length` makes 4.2 #3's header block larger than weir's largest frame
//!   (h2spec's default builds 20 kB, which fits in weir's 256 KiB frames and is served).
//!
//! Every case passes over h2c too: 3.5 #2 sends `INVALID CONNECTION PREFACE\r\n\r\n` where a
//! preface is due, on weir's cleartext port that serves HTTP/1.1 as well; a request line whose
//! version is not `HTTP/…` at all is closed without an answer (`ProtoError::NotHttp`), which is
//! what RFC 9113 §3.4 asks of an invalid preface.
//!
//! When the binary is missing the test is skipped (saying so), or fails under
//! `WEIR_REQUIRE_TOOLS=1` (`scripts/test`). Run it alone: `cargo test -p weir --test integration h2spec -- --nocapture`.

use crate::h2_support::TlsTestServer;
use weir::http::StatusCode;
use weir::{Config, Error, Exchange, Handler};
use weir_testkit::h2spec::{assert_all_pass, h2spec_binary, run_h2spec};

/// `/read` reads the body to its end before answering; anything else answers without reading.
struct ReadOrIgnore;

impl Handler for ReadOrIgnore {
    async fn handle(&self, ex: &mut Exchange<'_>) -> Result<(), Error> {
        if ex.request().path() == "/read" {
            let mut buf = [0u8; 16 * 1024];
            while ex.read_body(&mut buf).await? > 0 {}
            return ex
                .respond(StatusCode::OK)
                .body("the body was read to its end\n")
                .await;
        }
        ex.respond(StatusCode::OK)
            .body("answered without reading the body\n")
            .await
    }
}

#[test]
fn h2spec_strict_passes_over_h2c_and_tls_whether_or_not_the_body_is_read() {
    let Some(bin) = h2spec_binary() else {
        return;
    };
    let config = Config::default();
    let max_frame_size = config.http2.max_frame_size;
    let server = TlsTestServer::start_with(config, ReadOrIgnore);
    // The four runs at once: each spends most of its time waiting for frames.
    let runs: Vec<_> = [
        (server.addr, false, "/read"),
        (server.addr, false, "/ignore"),
        (server.tls_addr, true, "/read"),
        (server.tls_addr, true, "/ignore"),
    ]
    .into_iter()
    .map(|(addr, tls, path)| {
        let bin = bin.clone();
        let run = std::thread::spawn(move || run_h2spec(&bin, addr, tls, path, max_frame_size));
        (tls, path, run)
    })
    .collect();
    for (tls, path, run) in runs {
        let run = run.join().unwrap();
        let what = format!("{}, {path}", if tls { "TLS" } else { "h2c" });
        assert_all_pass(&run, &what, &[]);
    }
    server.stop();
}
