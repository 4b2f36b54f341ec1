//! Request trailers reach the handler once the body is complete: the trailer section of a
//! chunked HTTP/1.1 body (however it is split across reads) and the HEADERS frame that ends an
//! HTTP/2 request; never before the body is complete, and `None` when the client sent none.

#[cfg(all(feature = "http2", feature = "tls"))]
use crate::h2_support::h2c;
use crate::support::TestServer;
#[cfg(all(feature = "http2", feature = "tls"))]
use bytes::Bytes;
use std::io::Write;
use weir::{Config, Exchange, Handler};

/// Reads the body (`?how=chunk|file|read`), then answers `len;complete;name=value,...` with
/// the trailers it saw, or `len;complete;none`; also `before=` what `trailers()` said before
/// the last read.
struct EchoTrailers;

impl Handler for EchoTrailers {
    async fn handle(&self, ex: &mut Exchange<'_>) -> Result<(), weir::Error> {
        let how = ex.request().query().unwrap_or("how=read").to_owned();
        let mut len = 0usize;
        let mut seen_early = false;
        match how.as_str() {
            "how=chunk" => {
                while let Some(c) = ex.read_body_chunk().await? {
                    seen_early |= ex.trailers().is_some() && !ex.is_body_complete();
                    len += c.len();
                }
            }
            "how=file" => {
                let mut f = tempfile::tempfile().unwrap();
                len = ex.body_to_file(&mut f).await? as usize;
            }
            _ => {
                let mut buf = vec![0u8; 64 * 1024];
                loop {
                    seen_early |= ex.trailers().is_some() && !ex.is_body_complete();
                    let n = ex.read_body(&mut buf).await?;
                    if n == 0 {
                        break;
                    }
                    len += n;
                }
            }
        }
        let fields = match ex.trailers() {
            Some(map) => map
                .iter()
                .map(|(n, v)| format!("{}={}", n, String::from_utf8_lossy(v.as_bytes())))
                .collect::<Vec<_>>()
                .join(","),
            None => "none".to_owned(),
        };
        let text = format!(
            "{len};{};{fields};early={seen_early}",
            ex.is_body_complete()
        );
        ex.respond(http::StatusCode::OK).body(text).await
    }
}

#[test]
fn h1_chunked_trailers_reach_the_handler_at_every_split() {
    let server = TestServer::start_with(Config::default(), EchoTrailers, None);
    let body: &[u8] =
        b"5\r\nhello\r\n6\r\n world\r\n0\r\nContent-Digest: sha-256=:X=:\r\nX-Two: a b\r\n\r\n";
    for how in ["read", "chunk", "file"] {
        for split in [
            0,
            10,
            body.len() - 30,
            body.len() - 12,
            body.len() - 2,
            body.len() - 1,
        ] {
            let mut c = server.connect();
            let head = format!(
                "PUT /t?how={how} HTTP/1.1\r\nhost: t\r\ntransfer-encoding: chunked\r\ntrailer: content-digest, x-two\r\n\r\n"
            );
            c.send(head.as_bytes());
            c.send(&body[..split]);
            c.stream().flush().unwrap();
            std::thread::sleep(std::time::Duration::from_millis(5));
            c.send(&body[split..]);
            let r = c.read_response();
            assert_eq!(r.status, 200, "{how} {split}");
            assert_eq!(
                r.text(),
                "11;true;content-digest=sha-256=:X=:,x-two=a b;early=false",
                "{how} split {split}"
            );
        }
    }
    // No trailer fields, and a Content-Length body: none.
    let mut c = server.connect();
    c.send(
        b"PUT /t HTTP/1.1\r\nhost: t\r\ntransfer-encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
    );
    assert_eq!(c.read_response().text(), "3;true;none;early=false");
    c.send(b"PUT /t HTTP/1.1\r\nhost: t\r\ncontent-length: 3\r\n\r\nabc");
    assert_eq!(c.read_response().text(), "3;true;none;early=false");
    // The next request on the connection starts without the previous one's trailers.
    c.send(b"PUT /t HTTP/1.1\r\nhost: t\r\ntransfer-encoding: chunked\r\n\r\n1\r\na\r\n0\r\nA: 1\r\n\r\n");
    assert_eq!(c.read_response().text(), "1;true;a=1;early=false");
    c.send(b"PUT /t HTTP/1.1\r\nhost: t\r\ntransfer-encoding: chunked\r\n\r\n1\r\na\r\n0\r\n\r\n");
    assert_eq!(c.read_response().text(), "1;true;none;early=false");
    server.stop();
}

#[cfg(all(feature = "http2", feature = "tls"))]
#[test]
fn h2_trailers_reach_the_handler() {
    let server = TestServer::start_with(Config::default(), EchoTrailers, None);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let client = h2c(server.addr).await;
        for (how, trailers) in [
            ("read", true),
            ("chunk", true),
            ("file", true),
            ("read", false),
        ] {
            let request = http::Request::builder()
                .method("PUT")
                .uri(format!("http://localhost/t?how={how}"))
                .body(())
                .unwrap();
            let mut ready = client.clone().ready().await.unwrap();
            let (response, mut send) = ready.send_request(request, false).unwrap();
            send.send_data(Bytes::from_static(b"hello"), false).unwrap();
            send.send_data(Bytes::from_static(b" world"), !trailers)
                .unwrap();
            if trailers {
                let mut map = http::HeaderMap::new();
                map.insert("content-digest", "sha-256=:X=:".parse().unwrap());
                send.send_trailers(map).unwrap();
            }
            let response = response.await.unwrap();
            let mut recv = response.into_body();
            let mut out = Vec::new();
            while let Some(chunk) = recv.data().await {
                out.extend_from_slice(&chunk.unwrap());
            }
            let want = if trailers {
                "11;true;content-digest=sha-256=:X=:;early=false"
            } else {
                "11;true;none;early=false"
            };
            assert_eq!(String::from_utf8_lossy(&out), want, "{how} {trailers}");
        }
    });
    // Closes the client's connection (its task lives on this runtime) before the server stops.
    drop(rt);
    server.stop();
}
