//! Upload throughput over HTTP/1.1, HTTP/2 (h2c) and TLS (HTTP/1.1 and HTTP/2), side by side in
//! one run: one connection, a body written from memory in large pieces, a server that reads it
//! into a 1 MiB buffer and discards it. The figures of record are `weir-bench upload`'s HTTPS
//! and HTTP/2 rows; this example stays as the quick, in-process tool for profiling one
//! protocol (`perf record` sees client and server in one process) and for trying window
//! settings.
//!
//! ```sh
//! cargo run --release -p weir --example upload_protocols -- [MiB] [rounds] [PROTOCOLS]
//! ```
//!
//! `PROTOCOLS`, a comma-separated list, runs those alone against the first window setting (for
//! profiling: `perf record -g` sees the client on the main thread and the server on the
//! `tokio-rt-worker` threads): `h1`, `h2c`, `tls-h1`, `tls-h2`, and two that isolate the
//! client's share of HTTPS: `tls-h1-64k` (the TLS client with rustls's default 64 KiB send
//! buffer instead of 1 MiB) and `tls-send` (the TLS client alone: the same upload to a server
//! that completes the handshake and then discards the ciphertext without decrypting it).
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
    /// The same certificate, for the ciphertext-discarding server.
    raw_server: Arc<rustls::ServerConfig>,
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
    let key = rustls_pki_types::PrivateKeyDer::try_from(cert.signing_key.serialize_der()).unwrap();
    let raw_server = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![cert.cert.der().clone()], key)
        .unwrap();
    let mut client = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    client.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Tls {
        server,
        raw_server: Arc::new(raw_server),
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

/// A TLS server that completes the handshake, then reads and discards the ciphertext without
/// decrypting it, and answers one raw byte at the end of the stream: what is left is the
/// client's cost. Returns its address.
fn start_raw_tls_discard(config: Arc<rustls::ServerConfig>) -> SocketAddr {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            tx.send(listener.local_addr().unwrap()).unwrap();
            let acceptor = tokio_rustls::TlsAcceptor::from(config);
            let mut buf = vec![0u8; 1 << 20];
            loop {
                let (tcp, _) = listener.accept().await.unwrap();
                let (mut tcp, _) = acceptor.accept(tcp).await.unwrap().into_inner();
                while tcp.read(&mut buf).await.unwrap_or(0) > 0 {}
                let _ = tcp.write_all(b"k").await;
            }
        });
    });
    rx.recv().unwrap()
}

/// The client's side of `tls-send`: head and body encrypted and sent, then the write side
/// closed, then the server's one raw byte.
async fn send_only(mut s: tokio_rustls::client::TlsStream<TcpStream>, piece: &Bytes, len: u64) {
    send_request(&mut s, piece, len).await;
    let tcp = s.get_mut().0;
    tcp.shutdown().await.unwrap();
    let mut done = [0u8; 1];
    assert_eq!(tcp.read(&mut done).await.unwrap(), 1);
}

/// rustls encrypts at most 64 KiB ahead of the socket by default, so each `writev` carries
/// 64 KiB; the plain-text client writes 1 MiB at a time. This limit (1 MiB of records plus
/// their overheads) lets the TLS client do the same. `weir put` uses the same value.
const CLIENT_TLS_BUFFER: usize = (1 << 20) + 64 * 1024;

async fn connect_tls(
    addr: SocketAddr,
    client: &Arc<rustls::ClientConfig>,
    alpn: &[u8],
    buffer: Option<usize>,
) -> tokio_rustls::client::TlsStream<TcpStream> {
    let mut config = (**client).clone();
    config.alpn_protocols = vec![alpn.to_vec()];
    let tcp = TcpStream::connect(addr).await.unwrap();
    tcp.set_nodelay(true).unwrap();
    let name = rustls_pki_types::ServerName::try_from("localhost").unwrap();
    let mut tls = tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect(name, tcp)
        .await
        .unwrap();
    if buffer.is_some() {
        tls.get_mut().1.set_buffer_limit(buffer);
    }
    tls
}

/// HTTP/1.1: the head, then the body in 1 MiB writes.
async fn upload_h1<S: AsyncRead + AsyncWrite + Unpin>(mut s: S, piece: &Bytes, len: u64) {
    send_request(&mut s, piece, len).await;
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

#[derive(Clone, Copy, Debug, PartialEq)]
enum Proto {
    H1,
    H2c,
    TlsH1,
    TlsH2,
    TlsH1With64k,
    TlsSend,
}

impl Proto {
    fn parse(name: &str) -> Proto {
        match name {
            "h1" => Proto::H1,
            "h2c" => Proto::H2c,
            "tls-h1" => Proto::TlsH1,
            "tls-h2" => Proto::TlsH2,
            "tls-h1-64k" => Proto::TlsH1With64k,
            "tls-send" => Proto::TlsSend,
            other => panic!(
                "unknown protocol {other:?}: h1, h2c, tls-h1, tls-h2, tls-h1-64k or tls-send"
            ),
        }
    }
}

struct Addrs {
    plain: SocketAddr,
    secure: SocketAddr,
    raw_tls: SocketAddr,
}

/// CPU time of this thread and of the whole process, in nanoseconds (`/proc/*/schedstat`: time
/// spent running, with nanosecond resolution). The client runs on this thread; the servers'
/// threads are otherwise idle, so the difference is the server's.
fn cpu_ns() -> (u64, u64) {
    let read = |path: &std::path::Path| -> u64 {
        std::fs::read_to_string(path)
            .ok()
            .and_then(|s| s.split_whitespace().next()?.parse().ok())
            .unwrap_or(0)
    };
    let this = read(std::path::Path::new("/proc/thread-self/schedstat"));
    let all = std::fs::read_dir("/proc/self/task")
        .map(|tasks| {
            tasks
                .filter_map(Result::ok)
                .map(|t| read(&t.path().join("schedstat")))
                .sum()
        })
        .unwrap_or(0);
    (this, all)
}

/// One upload: GB/s, and the client's and server's CPU seconds.
struct Measured {
    gbps: f64,
    client_cpu: f64,
    server_cpu: f64,
}

async fn run(proto: Proto, a: &Addrs, t: &Tls, len: u64) -> Measured {
    let cpu_before = cpu_ns();
    let (plain, secure) = (a.plain, a.secure);
    let big = Some(CLIENT_TLS_BUFFER);
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
            let s = connect_tls(secure, &t.client, b"http/1.1", big).await;
            upload_h1(s, &piece, len).await
        }
        Proto::TlsH2 => {
            let s = connect_tls(secure, &t.client, b"h2", big).await;
            upload_h2(s, &piece, len).await
        }
        Proto::TlsH1With64k => {
            let s = connect_tls(secure, &t.client, b"http/1.1", None).await;
            upload_h1(s, &piece, len).await
        }
        Proto::TlsSend => {
            let s = connect_tls(a.raw_tls, &t.client, b"http/1.1", big).await;
            send_only(s, &piece, len).await
        }
    }
    let gbps = len as f64 / start.elapsed().as_secs_f64() / 1e9;
    let cpu_after = cpu_ns();
    let client = cpu_after.0.saturating_sub(cpu_before.0);
    let all = cpu_after.1.saturating_sub(cpu_before.1);
    Measured {
        gbps,
        client_cpu: client as f64 / 1e9,
        server_cpu: all.saturating_sub(client) as f64 / 1e9,
    }
}

fn main() {
    // As the `weir` binary does: keep h2's freed frame buffers for reuse (weir::malloc).
    weir::malloc::tune_for_streaming();
    let mut args = std::env::args().skip(1);
    let mib: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(700);
    let rounds: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(3);
    let only: Option<Vec<Proto>> = args
        .next()
        .map(|a| a.split(',').map(Proto::parse).collect());
    let len = mib << 20;
    let t = tls();
    let variants: Vec<(&str, Config)> = {
        let base = || Config::default().with_max_body_size(None);
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
        .take(if only.is_some() { 1 } else { usize::MAX })
        .map(|(name, config)| (name, start(config, t.server.clone())))
        .collect();
    let raw_tls = start_raw_tls_discard(t.raw_server.clone());
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    println!("upload of {mib} MiB over one connection, {rounds} interleaved rounds; GB/s");
    let protos = only.unwrap_or_else(|| vec![Proto::H1, Proto::H2c, Proto::TlsH1, Proto::TlsH2]);
    let mut results: Vec<Vec<Vec<f64>>> = vec![vec![Vec::new(); protos.len()]; servers.len()];
    // CPU seconds per GB: [server][protocol] → (client, server) per round.
    let mut cpu: Vec<Vec<Vec<(f64, f64)>>> = vec![vec![Vec::new(); protos.len()]; servers.len()];
    for _ in 0..rounds {
        for (v, (_, (plain, secure, _))) in servers.iter().enumerate() {
            let addrs = Addrs {
                plain: *plain,
                secure: *secure,
                raw_tls,
            };
            for (p, proto) in protos.iter().enumerate() {
                let m = rt.block_on(run(*proto, &addrs, &t, len));
                results[v][p].push(m.gbps);
                let gb = len as f64 / 1e9;
                cpu[v][p].push((m.client_cpu / gb, m.server_cpu / gb));
            }
        }
    }
    let median = |xs: &Vec<f64>| {
        let mut xs = xs.clone();
        xs.sort_by(|a, b| a.total_cmp(b));
        xs[xs.len() / 2]
    };
    // Ratios are medians of per-round ratios against HTTP/1.1 of the same round (or the first
    // protocol listed), so that a slow round slows both sides of its ratio.
    let base = protos.iter().position(|p| *p == Proto::H1).unwrap_or(0);
    for (v, (name, (_, _, handle))) in servers.iter().enumerate() {
        println!(
            "\n{name} (peak read-ahead {} KiB)",
            handle.stats().peak_body_buffered() >> 10
        );
        let rows = &results[v];
        let ratio = |p: usize, q: usize| {
            let per_round: Vec<f64> = rows[p].iter().zip(&rows[q]).map(|(a, b)| a / b).collect();
            median(&per_round)
        };
        for (p, proto) in protos.iter().enumerate() {
            println!(
                "  {:<13} {:>6.2} GB/s  {:>5.2} x {:?}   (rounds: {:?})",
                format!("{proto:?}"),
                median(&rows[p]),
                ratio(p, base),
                protos[base],
                rows[p]
                    .iter()
                    .map(|x| (x * 100.0).round() / 100.0)
                    .collect::<Vec<_>>()
            );
        }
        println!(
            "  CPU seconds per GB (medians): client, server; server / server of {:?}",
            protos[base]
        );
        for (p, proto) in protos.iter().enumerate() {
            let client: Vec<f64> = cpu[v][p].iter().map(|c| c.0).collect();
            let server: Vec<f64> = cpu[v][p].iter().map(|c| c.1).collect();
            let server_ratio: Vec<f64> = cpu[v][p]
                .iter()
                .zip(&cpu[v][base])
                .map(|(c, b)| c.1 / b.1)
                .collect();
            println!(
                "  {:<13} client {:>5.3}  server {:>5.3}  server x {:.2}",
                format!("{proto:?}"),
                median(&client),
                median(&server),
                median(&server_ratio)
            );
        }
        if protos.len() == 4 && protos[3] == Proto::TlsH2 {
            println!(
                "  TLS h1 / h1 = {:.2}, h2c / h1 = {:.2}, TLS h2 / TLS h1 = {:.2}",
                ratio(2, 0),
                ratio(1, 0),
                ratio(3, 2)
            );
        }
    }
}

/// Writes a `PUT` head for `len` body bytes, then the body in `piece`-sized writes.
async fn send_request<S: AsyncWrite + Unpin>(s: &mut S, piece: &Bytes, len: u64) {
    let head = format!("PUT /u HTTP/1.1\r\nHost: x\r\nContent-Length: {len}\r\n\r\n");
    s.write_all(head.as_bytes()).await.unwrap();
    let mut left = len;
    while left > 0 {
        let n = left.min(piece.len() as u64) as usize;
        s.write_all(&piece[..n]).await.unwrap();
        left -= n as u64;
    }
    s.flush().await.unwrap();
}
