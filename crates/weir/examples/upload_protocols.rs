//! Upload throughput over HTTP/1.1, HTTP/2 (h2c) and TLS (HTTP/1.1 and HTTP/2), side by side in
//! one run: one connection, a body written from memory in large pieces, a server that reads it
//! into a 1 MiB buffer and discards it. Until `weir-bench` has these rows, this is the
//! measurement behind the HTTP/2 and HTTPS targets.
//!
//! ```sh
//! cargo run --release -p weir --example upload_protocols -- [MiB] [rounds]
//! ```
//!
//! Prints GB/s per protocol and per window setting, and ratios against HTTP/1.1 of the same
//! round (rounds are interleaved, so a noisy neighbour affects every protocol alike).

use bytes::Bytes;
use http::StatusCode;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use weir::{Config, Exchange, Handler};

struct Discard;

impl Handler for Discard {
    async fn handle(&self, ex: &mut Exchange<'_>) -> Result<(), weir::Error> {
        let mut buf = vec![0u8; 1 << 20];
        let mut total = 0u64;
        loop {
            let n = ex.read_body(&mut buf).await?;
            if n == 0 {
                break;
            }
            total += n as u64;
        }
        ex.respond(StatusCode::OK).body(total.to_string()).await
    }
}

struct Tls {
    server: weir::TlsConfig,
    client: Arc<rustls::ClientConfig>,
}

fn tls() -> Tls {
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
    let server = weir::TlsConfig::from_pem(
        cert.cert.pem().as_bytes(),
        cert.signing_key.serialize_pem().as_bytes(),
    )
    .unwrap();
    let mut roots = rustls::RootCertStore::empty();
    roots.add(cert.cert.der().clone()).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut client = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    client.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Tls {
        server,
        client: Arc::new(client),
    }
}

/// Starts a server with `config` on its own two-thread runtime; returns (plain, tls) addresses.
fn start(config: Config, tls: weir::TlsConfig) -> (SocketAddr, SocketAddr, weir::ServerHandle) {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let mut server = weir::Server::new(config);
            let plain = server.listen_tcp("127.0.0.1:0").await.unwrap();
            let secure = server.listen_tls("127.0.0.1:0", tls).await.unwrap();
            tx.send((plain, secure, server.handle())).unwrap();
            server.serve(Discard).await.unwrap();
        });
    });
    rx.recv().unwrap()
}

async fn connect_tls(
    addr: SocketAddr,
    client: &Arc<rustls::ClientConfig>,
    alpn: &[u8],
) -> tokio_rustls::client::TlsStream<TcpStream> {
    let mut config = (**client).clone();
    config.alpn_protocols = vec![alpn.to_vec()];
    let tcp = TcpStream::connect(addr).await.unwrap();
    tcp.set_nodelay(true).unwrap();
    let name = rustls_pki_types::ServerName::try_from("localhost").unwrap();
    tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect(name, tcp)
        .await
        .unwrap()
}

/// HTTP/1.1: the head, then the body in 1 MiB writes.
async fn upload_h1<S: AsyncRead + AsyncWrite + Unpin>(mut s: S, piece: &Bytes, len: u64) {
    let head = format!("PUT /u HTTP/1.1\r\nHost: x\r\nContent-Length: {len}\r\n\r\n");
    s.write_all(head.as_bytes()).await.unwrap();
    let mut left = len;
    while left > 0 {
        let n = left.min(piece.len() as u64) as usize;
        s.write_all(&piece[..n]).await.unwrap();
        left -= n as u64;
    }
    s.flush().await.unwrap();
    let mut resp = vec![0u8; 4096];
    let n = s.read(&mut resp).await.unwrap();
    assert!(resp[..n].starts_with(b"HTTP/1.1 200"), "{:?}", &resp[..n]);
}

/// HTTP/2: pieces as flow control allows (the client frames them at the server's max frame
/// size).
async fn upload_h2<S: AsyncRead + AsyncWrite + Unpin + Send + 'static>(
    s: S,
    piece: &Bytes,
    len: u64,
) {
    let (client, conn) = h2::client::Builder::new()
        .initial_window_size(16 << 20)
        .handshake::<_, Bytes>(s)
        .await
        .unwrap();
    tokio::spawn(async move {
        let _ = conn.await;
    });
    let mut client = client.ready().await.unwrap();
    let request = http::Request::put("http://localhost/u").body(()).unwrap();
    let (response, mut send) = client.send_request(request, false).unwrap();
    let mut left = len;
    while left > 0 {
        send.reserve_capacity(left.min(4 << 20) as usize);
        let cap = std::future::poll_fn(|cx| send.poll_capacity(cx))
            .await
            .unwrap()
            .unwrap();
        let mut cap = cap as u64;
        while cap > 0 && left > 0 {
            let n = cap.min(left).min(piece.len() as u64) as usize;
            left -= n as u64;
            cap -= n as u64;
            send.send_data(piece.slice(..n), left == 0).unwrap();
        }
    }
    let response = response.await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
}

#[derive(Clone, Copy, Debug)]
enum Proto {
    H1,
    H2c,
    TlsH1,
    TlsH2,
}

async fn run(proto: Proto, plain: SocketAddr, secure: SocketAddr, t: &Tls, len: u64) -> f64 {
    let piece = Bytes::from(vec![0x5au8; 1 << 20]);
    let start = Instant::now();
    match proto {
        Proto::H1 => {
            let s = TcpStream::connect(plain).await.unwrap();
            s.set_nodelay(true).unwrap();
            upload_h1(s, &piece, len).await;
        }
        Proto::H2c => {
            let s = TcpStream::connect(plain).await.unwrap();
            s.set_nodelay(true).unwrap();
            upload_h2(s, &piece, len).await;
        }
        Proto::TlsH1 => {
            upload_h1(
                connect_tls(secure, &t.client, b"http/1.1").await,
                &piece,
                len,
            )
            .await
        }
        Proto::TlsH2 => upload_h2(connect_tls(secure, &t.client, b"h2").await, &piece, len).await,
    }
    len as f64 / start.elapsed().as_secs_f64() / 1e9
}

fn main() {
    let mut args = std::env::args().skip(1);
    let mib: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(700);
    let rounds: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(3);
    let len = mib << 20;
    let t = tls();
    let variants: Vec<(&str, Config)> = {
        let base = || Config {
            max_body_size: None,
            ..Config::default()
        };
        let mut fixed = base();
        fixed.http2.adaptive_window = false;
        let mut adaptive = base();
        adaptive.http2.adaptive_window = true;
        let mut small_frames = base();
        small_frames.http2.adaptive_window = false;
        small_frames.http2.max_frame_size = 16 * 1024;
        vec![
            ("window 1 MiB fixed, frames 256 KiB", fixed),
            ("window adaptive (max 16 MiB), frames 256 KiB", adaptive),
            ("window 1 MiB fixed, frames 16 KiB", small_frames),
        ]
    };
    let servers: Vec<_> = variants
        .into_iter()
        .map(|(name, config)| (name, start(config, t.server.clone())))
        .collect();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    println!("upload of {mib} MiB over one connection, {rounds} interleaved rounds; GB/s");
    let protos = [Proto::H1, Proto::H2c, Proto::TlsH1, Proto::TlsH2];
    let mut results: Vec<Vec<Vec<f64>>> = vec![vec![Vec::new(); protos.len()]; servers.len()];
    for _ in 0..rounds {
        for (v, (_, (plain, secure, _))) in servers.iter().enumerate() {
            for (p, proto) in protos.iter().enumerate() {
                let gbps = rt.block_on(run(*proto, *plain, *secure, &t, len));
                results[v][p].push(gbps);
            }
        }
    }
    let median = |xs: &Vec<f64>| {
        let mut xs = xs.clone();
        xs.sort_by(|a, b| a.total_cmp(b));
        xs[xs.len() / 2]
    };
    for (v, (name, (_, _, handle))) in servers.iter().enumerate() {
        let m: Vec<f64> = results[v].iter().map(median).collect();
        println!(
            "\n{name} (peak read-ahead {} KiB)",
            handle.stats().peak_body_buffered() >> 10
        );
        for (p, proto) in protos.iter().enumerate() {
            println!(
                "  {:<7} {:>6.2} GB/s  {:>5.2} x h1   (rounds: {:?})",
                format!("{proto:?}"),
                m[p],
                m[p] / m[0],
                results[v][p]
                    .iter()
                    .map(|x| (x * 100.0).round() / 100.0)
                    .collect::<Vec<_>>()
            );
        }
        println!(
            "  TLS h1 / h1 = {:.2}, h2c / h1 = {:.2}, TLS h2 / TLS h1 = {:.2}",
            m[2] / m[0],
            m[1] / m[0],
            m[3] / m[2]
        );
    }
}
