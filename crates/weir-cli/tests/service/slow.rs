//! Memory of slow uploads: an upload holds a pooled 512 KiB buffer only while it has bytes to
//! move. Hundreds of uploads that sent a little and went silent hold none (the pool's lent
//! count, exact), in the inline part of the body and past the pipeline's start alike; and
//! they all complete byte-exact when their clients go on.
//!
//! The server runs without a minimum data rate, so the stalled clients stay as long as the test
//! needs them: nothing here depends on timing.

use crate::support::*;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;
use weir_store::LocalOptions;

/// The hashed path's inline prefix (`serve::upload::PIPELINE_AFTER`).
const INLINE_PREFIX: usize = 2 << 20;

fn no_rate_limit() -> weir::Config {
    weir::Config::default().with_min_body_rate(None)
}

/// Starts `count` uploads of `total` bytes to `{name}/{i}` that each send their first `sent`
/// bytes.
fn start_stalled(
    addr: std::net::SocketAddr,
    name: &str,
    count: usize,
    sent: &[u8],
    total: usize,
) -> Vec<TcpStream> {
    (0..count)
        .map(|i| {
            let mut s = TcpStream::connect(addr).unwrap();
            s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
            let head = format!(
                "PUT /files/{name}/{i} HTTP/1.1\r\nhost: t\r\ncontent-length: {total}\r\n\r\n"
            );
            s.write_all(head.as_bytes()).unwrap();
            s.write_all(sent).unwrap();
            s
        })
        .collect()
}

/// Temporaries holding exactly `len` bytes.
fn temps_of_len(root: &std::path::Path, len: u64) -> usize {
    temps(root)
        .iter()
        .filter(|t| std::fs::metadata(t).is_ok_and(|m| m.len() == len))
        .count()
}

#[test]
fn stalled_uploads_hold_no_upload_buffer() {
    let s = InProcessServe::start_with(LocalOptions::default(), no_rate_limit());
    const STALLED: usize = 200;
    // The first `PIPELINED` uploads go on past the pipeline's start later; the others stay
    // small (what matters is that they are stalled, not their size).
    const PIPELINED: usize = 8;
    let big = INLINE_PREFIX + 1_000_003;
    let small = 300_000;
    let body = data(big, 77);
    let first = &body[..100];
    let mut clients = start_stalled(s.addr, "big", PIPELINED, first, big);
    clients.extend(start_stalled(
        s.addr,
        "small",
        STALLED - PIPELINED,
        first,
        small,
    ));
    // Every upload has written what it got (the bytes are in its temporary) and waits.
    wait_for("every stalled upload's first bytes written", || {
        temps_of_len(&s.root, first.len() as u64) == STALLED
    });
    wait_for("no upload buffer lent while the clients are silent", || {
        s.service.buffers_lent() == 0
    });

    // Past the pipeline's start: a hashing thread has the lane; once the bytes are hashed the
    // lane gives its buffers back, and the hash state keeps none.
    let past = INLINE_PREFIX + 700_001;
    for c in clients.iter_mut().take(PIPELINED) {
        c.write_all(&body[first.len()..past]).unwrap();
    }
    wait_for("the pipelined uploads' bytes written", || {
        temps_of_len(&s.root, past as u64) == PIPELINED
    });
    wait_for("no upload buffer lent after the pipeline stalls", || {
        s.service.buffers_lent() == 0
    });

    // The clients go on: every upload completes, byte-exact.
    for (i, c) in clients.iter_mut().enumerate() {
        let (from, to) = if i < PIPELINED {
            (past, big)
        } else {
            (first.len(), small)
        };
        c.write_all(&body[from..to]).unwrap();
    }
    for (i, mut c) in clients.into_iter().enumerate() {
        let want = sha256(&body[..if i < PIPELINED { big } else { small }]);
        let mut raw = Vec::new();
        // The server keeps the connection: read the one response (it ends with its JSON).
        let mut buf = [0u8; 4096];
        while !raw.ends_with(b"}") && !raw.ends_with(b"}\n") {
            let n = c.read(&mut buf).unwrap();
            assert!(n > 0, "upload {i}: connection closed");
            raw.extend_from_slice(&buf[..n]);
        }
        let r = parse_response(&raw);
        assert_eq!(r.status, 201, "upload {i}: {}", r.text());
        assert_eq!(r.json()["sha256"], want, "upload {i}");
    }
    wait_for("every buffer back", || s.service.buffers_lent() == 0);
    s.stop();
}

#[test]
fn stalled_http2_uploads_hold_no_upload_buffer() {
    let s = InProcessServe::start_with(LocalOptions::default(), no_rate_limit());
    const STALLED: usize = 20;
    let body = data(INLINE_PREFIX + 500_000, 78);
    let first = 100;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let tcp = tokio::net::TcpStream::connect(s.addr).await.unwrap();
        let (client, conn) = h2::client::handshake(tcp).await.unwrap();
        let driver = tokio::spawn(async move {
            let _ = conn.await;
        });
        let mut streams = Vec::new();
        for i in 0..STALLED {
            let request = http::Request::builder()
                .method("PUT")
                .uri(format!("http://localhost/files/h2/{i}"))
                .header("content-length", body.len())
                .body(())
                .unwrap();
            let mut ready = client.clone().ready().await.unwrap();
            let (response, mut send) = ready.send_request(request, false).unwrap();
            send.send_data(bytes::Bytes::copy_from_slice(&body[..first]), false)
                .unwrap();
            streams.push((response, send));
        }
        // The connection's task keeps running while this one polls the file system.
        let root = s.root.clone();
        tokio::task::spawn_blocking(move || {
            wait_for("every stalled HTTP/2 upload's first bytes written", || {
                temps_of_len(&root, first as u64) == STALLED
            })
        })
        .await
        .unwrap();
        let service = std::sync::Arc::clone(&s.service);
        tokio::task::spawn_blocking(move || {
            wait_for(
                "no upload buffer lent while the HTTP/2 clients are silent",
                || service.buffers_lent() == 0,
            )
        })
        .await
        .unwrap();
        // Then they go on (one at a time, within the stream windows) and complete byte-exact.
        for (response, mut send) in streams {
            let mut rest = bytes::Bytes::copy_from_slice(&body[first..]);
            while !rest.is_empty() {
                send.reserve_capacity(rest.len());
                let cap = std::future::poll_fn(|cx| send.poll_capacity(cx))
                    .await
                    .unwrap()
                    .unwrap();
                let piece = rest.split_to(cap.min(rest.len()));
                send.send_data(piece, rest.is_empty()).unwrap();
            }
            assert_eq!(response.await.unwrap().status().as_u16(), 201);
        }
        drop(client);
        driver.abort();
    });
    drop(rt);
    for i in 0..STALLED {
        assert_eq!(std::fs::read(s.root.join(format!("h2/{i}"))).unwrap(), body);
    }
    wait_for("every buffer back", || s.service.buffers_lent() == 0);
    s.stop();
}
